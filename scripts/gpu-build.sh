#!/usr/bin/env bash
# Builds and tests shefl on a GPU machine against its pip PyTorch's
# CUDA LibTorch. That machine has cmake, ninja, nvcc and PyTorch but no apt
# and no network, so Debian 12's gRPC, protobuf, abseil, prometheus-cpp and
# the rest travel with the checkout as unpacked .deb files (docs/GPU.md).
#
#   scripts/gpu-build.sh pack [--no-data]   HERE (Debian 12): fill .gpu/
#   scripts/gpu-build.sh build              THERE: configure + build build-gpu/
#   scripts/gpu-build.sh test [CTEST ARGS]  THERE: ctest with CUDA visible
#   scripts/gpu-build.sh all  [CTEST ARGS]  THERE: build, then test
#
# Copy the checkout with .gpu/ to the GPU machine, then there:
#   OUT=gpu-logs bash scripts/gpu-build.sh all
#
# .gpu/ (git-ignored) is what travels: prefix.tar.xz (the Debian libraries,
# about 10 MB) and fashion-mnist/ (the data set, 30 MB). The prefix is
# unpacked into .gpu-prefix/, which never travels.
# Environment: SHEFL_GPU_BUILD_DIR (default build-gpu), SHEFL_TORCH_PREFIX
# (a Torch CMake prefix instead of asking python3's torch), SHEFL_GPU_DEADLINE
# (seconds `all` may take, default 570), SHEFL_GPU_CTEST_EXCLUDE (ctest -E
# regex of tests that need tools only Debian has; empty runs everything),
# OUT (logs are copied there when set).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARRY="$ROOT/.gpu"
TARBALL="$CARRY/prefix.tar.xz"
PREFIX="${SHEFL_GPU_PREFIX:-$ROOT/.gpu-prefix}"
LIBDIR="$PREFIX/usr/lib/x86_64-linux-gnu"
BUILD_DIR="${SHEFL_GPU_BUILD_DIR:-$ROOT/build-gpu}"
START=$(date +%s)

# Tests that need programs only a Debian machine with scripts/setup.sh has
# (clang-14, podman, docker, prometheus/promtool, kubectl, ip netns).
DEFAULT_EXCLUDE='^(fuzz_test|containers_test|docker_image_test|deploy_[a-z]+_test|dashboard_queries_test|lab_netns_test)\.'

# Debian 12 packages that make the prefix. Never libc6, libstdc++6 or
# libgcc-s1: the GPU machine's own (newer) ones must be used.
PACKAGES=(
  libgrpc++-dev libgrpc-dev libgrpc++1.51 libgrpc29 protobuf-compiler-grpc
  libprotobuf-dev libprotobuf32 libprotobuf-lite32 libprotoc32 protobuf-compiler
  libabsl-dev libabsl20220623 libc-ares2 libc-ares-dev libre2-9 libre2-dev
  zlib1g zlib1g-dev libssl-dev libssl3
  prometheus-cpp-dev libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0
  libcivetweb1
  libyaml-cpp-dev libyaml-cpp0.7 nlohmann-json3-dev catch2
  libbenchmark-dev libbenchmark1debian
)

die() { echo "gpu-build: $*" >&2; exit 1; }
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
log() { echo "gpu-build: $*" >&2; }

# ---------------------------------------------------------------- pack (here)

pack() {
  local with_data=1
  [ "${1:-}" = "--no-data" ] && with_data=0
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
    || die "pack runs on Debian 12 (apt-get, dpkg-deb); build and test run on the GPU machine"
  grep -q 'VERSION_ID="12"' /etc/os-release 2>/dev/null \
    || log "warning: not Debian 12; the prefix must hold Debian 12's libraries"
  local debs; debs="$(mktemp -d)"; chmod 755 "$debs"  # apt's _apt user writes there
  trap 'rm -rf "$debs"' RETURN
  log "downloading ${#PACKAGES[@]} packages"
  (cd "$debs" && apt-get download -q "${PACKAGES[@]}" >/dev/null) \
    || die "apt-get download failed (is Debian's archive reachable? try apt-get update)"
  rm -rf "$PREFIX" && mkdir -p "$PREFIX" "$CARRY"
  local deb
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$PREFIX"; done
  (cd "$debs" && ls *.deb) >"$CARRY/MANIFEST"
  prune_prefix
  log "prefix $PREFIX: $(du -sh "$PREFIX" | cut -f1) unpacked"
  tar -C "$PREFIX" -cJf "$TARBALL" usr
  touch "$PREFIX/.unpacked"  # up to date with the tarball: build keeps it
  if [ "$with_data" = 1 ]; then
    (cd "$debs" && apt-get download -q dataset-fashion-mnist >/dev/null) \
      || die "apt-get download dataset-fashion-mnist failed (or use pack --no-data)"
    rm -rf "$CARRY/fashion-mnist" "$debs/data" && mkdir -p "$CARRY/fashion-mnist"
    dpkg-deb -x "$debs"/dataset-fashion-mnist_*.deb "$debs/data"
    cp "$debs"/data/usr/share/datasets/fashion-mnist/*.gz "$CARRY/fashion-mnist/"
  else
    rm -rf "$CARRY/fashion-mnist"
  fi
  local tree; tree=$(cd "$ROOT" && git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
  local carry; carry=$(du -sb "$CARRY" | cut -f1)
  log "$(du -h "$TARBALL" | cut -f1) $TARBALL; .gpu/ $((carry / 1048576)) MiB +" \
      "tracked tree $((tree / 1048576)) MiB = $(((carry + tree) / 1048576)) MiB to copy"
  echo "next: copy the checkout with .gpu/ to the GPU machine; there: bash scripts/gpu-build.sh all"
}

# Keeps what a build links or a CMake config checks for; drops the rest.
prune_prefix() {
  rm -rf "$PREFIX"/usr/share/{doc,man,lintian,bug} "$PREFIX"/etc
  # zlib1g installs into /lib: move it beside the rest (only usr/ travels).
  if [ -d "$PREFIX/lib" ]; then
    cp -a "$PREFIX"/lib/x86_64-linux-gnu/. "$LIBDIR"/ && rm -rf "$PREFIX/lib"
  fi
  # Absolute links (zlib1g-dev's libz.so -> /lib/...) would point into the
  # machine's own /lib there: point them at the copy in the same folder.
  local l t
  while IFS= read -r -d '' l; do
    t="$(basename "$(readlink "$l")")"
    [ -e "$(dirname "$l")/$t" ] || die "link $l -> $(readlink "$l"): no $t beside it"
    ln -sfn "$t" "$l"
  done < <(find "$PREFIX" -type l -lname '/*' -print0)
  find "$PREFIX" -xtype l -delete  # libprometheus-cpp-push.so: push is not carried
  # Static archives that an exported CMake target names must stay, or
  # find_package fails its file check (Catch2WithMain, benchmark_main).
  local keep; keep=$(grep -rhoE '[A-Za-z0-9_.+-]+\.a"' "$PREFIX"/usr/lib \
                      --include='*.cmake' 2>/dev/null | tr -d '"' | sort -u)
  local a
  while IFS= read -r -d '' a; do
    grep -qxF "$(basename "$a")" <<<"$keep" || rm -f "$a"
  done < <(find "$PREFIX" -name '*.a' -print0)
  local bad
  bad=$(find "$PREFIX" -name 'libc.so.6' -o -name 'libstdc++.so*' -o -name 'libgcc_s.so*')
  [ -z "$bad" ] || die "prefix holds a system runtime: $bad"
}

# ------------------------------------------------------------- build (there)

need_prefix() {
  if [ -f "$TARBALL" ] && { [ ! -d "$LIBDIR" ] || [ "$TARBALL" -nt "$PREFIX/.unpacked" ]; }; then
    rm -rf "$PREFIX" && mkdir -p "$PREFIX"
    if command -v xz >/dev/null; then
      tar -C "$PREFIX" -xJf "$TARBALL"
    else
      python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        "$TARBALL" "$PREFIX"
    fi
    touch "$PREFIX/.unpacked"
  fi
  [ -d "$LIBDIR" ] || die "no prefix: run scripts/gpu-build.sh pack on the Debian machine" \
    "first, then copy .gpu/ with the checkout to this machine"
}

# Torch's CMake prefix: pip's torch there, or SHEFL_TORCH_PREFIX (Debian's
# CPU LibTorch, /usr, stands in when this script is tried on Debian).
torch_prefix() {
  if [ -n "${SHEFL_TORCH_PREFIX:-}" ]; then echo "$SHEFL_TORCH_PREFIX"; return; fi
  python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null \
    || die "python3 has no torch: set SHEFL_TORCH_PREFIX to a LibTorch CMake prefix"
}

# What docs/GPU.md ("What `build` does") says to check before trusting a
# build: version, CUDA, the C++11 ABI, and that the wheel neither exports
# protobuf symbols nor ships protobuf headers that would shadow Debian's.
torch_report() {
  [ -n "${SHEFL_TORCH_PREFIX:-}" ] && { log "torch: $SHEFL_TORCH_PREFIX (not python's)"; return; }
  python3 - <<'EOF' || true
import os, torch
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "available", torch.cuda.is_available(),
      "devices", torch.cuda.device_count(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")
print("torch _GLIBCXX_USE_CXX11_ABI", torch._C._GLIBCXX_USE_CXX11_ABI, "(Debian: 1)")
inc = os.path.join(os.path.dirname(torch.__file__), "include", "google")
print("torch/include/google:", sorted(os.listdir(inc)) if os.path.isdir(inc) else "absent",
      "(the prefix's headers come first either way)")
EOF
  local lib; lib="$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')/lib/libtorch_cpu.so"
  if [ -f "$lib" ] && command -v nm >/dev/null; then
    log "google::protobuf symbols exported by libtorch_cpu.so (expect 0):" \
        "$(nm -DC --defined-only "$lib" | grep -c 'google::protobuf' || true)"
  fi
  command -v nvidia-smi >/dev/null && nvidia-smi -L || true
  [ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc --version | tail -2 || true
}

build() {
  need_prefix
  local torch; torch="$(torch_prefix)"
  torch_report 2>&1 | tee_log torch.txt
  # protoc and grpc_cpp_plugin have no RUNPATH; configure and build run them.
  export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local cuda=()
  if [ -x /usr/local/cuda/bin/nvcc ] && [ -z "${SHEFL_TORCH_PREFIX:-}" ]; then
    # CMake ignores CUDA_HOME; nvcc 13 rejects the old architectures CMake
    # falls back to when it sees no GPU at configure time.
    cuda=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DTORCH_CUDA_ARCH_LIST=9.0
          -DCMAKE_CUDA_ARCHITECTURES=90)
  fi
  log "configuring $BUILD_DIR (prefix $PREFIX, torch $torch)"
  set +e
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSHEFL_PREFIX="$PREFIX" -DCMAKE_PREFIX_PATH="$torch" \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 "${cuda[@]}" 2>&1 | tee_log configure.txt
  local rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" = 0 ] || die "configure failed (rc $rc; log: configure.txt)"
  local jobs; jobs="$(nproc)"
  local limit=()
  [ -n "${BUILD_SECONDS:-}" ] && limit=(timeout "$BUILD_SECONDS")
  local blog="${OUT:-$BUILD_DIR}/build.txt"
  log "building with $jobs jobs (log: $blog)"
  set +e
  "${limit[@]}" cmake --build "$BUILD_DIR" -j "$jobs" -- ${SHEFL_GPU_TARGETS:-} >"$blog" 2>&1
  rc=$?
  set -e
  if [ "$rc" = 124 ]; then
    die "build unfinished after ${BUILD_SECONDS}s: run the same command again" \
        "(ninja resumes in $BUILD_DIR)"
  fi
  if [ "$rc" != 0 ]; then
    grep -E -A12 '^FAILED' "$blog" | head -120
    tail -5 "$blog"
    die "build failed (rc $rc; log: $blog)"
  fi
  check_binary
  log "build done in $(($(date +%s) - START)) s"
}

# The daemons must resolve gRPC and protobuf from the prefix, not the system.
check_binary() {
  local bin="$BUILD_DIR/bin/shefl-coordinator"
  [ -x "$bin" ] || return 0
  {
    readelf -d "$bin" | grep -E 'R(UN)?PATH' || echo "no RPATH/RUNPATH"
    ldd "$bin" | grep -E 'grpc|protobuf|absl_base|re2|cares|prometheus|torch_cuda|torch_cpu|c10_cuda'
  } 2>&1 | tee_log ldd.txt
  if ldd "$bin" | grep -E 'libgrpc|libprotobuf' | grep -vq "$PREFIX"; then
    die "shefl-coordinator resolves gRPC/protobuf outside $PREFIX (ldd.txt)"
  fi
}

# ------------------------------------------------------------- test (there)

run_tests() {
  [ -f "$BUILD_DIR/CTestTestfile.cmake" ] || die "no build in $BUILD_DIR: run build first"
  need_prefix
  export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OPENBLAS_NUM_THREADS=1
  # CUDA stays visible (an inherited empty CUDA_VISIBLE_DEVICES would hide it).
  [ "${CUDA_VISIBLE_DEVICES-unset}" = "" ] && unset CUDA_VISIBLE_DEVICES
  # data_test and the quick experiment read Debian's path; root can place it.
  local fm=/usr/share/datasets/fashion-mnist
  if [ ! -d "$fm" ] && [ -d "$CARRY/fashion-mnist" ] && [ -w /usr/share ]; then
    mkdir -p "$(dirname "$fm")" && cp -r "$CARRY/fashion-mnist" "$fm"
  fi
  local exclude="${SHEFL_GPU_CTEST_EXCLUDE-$DEFAULT_EXCLUDE}"
  local args=(--test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)")
  [ -n "$exclude" ] && args+=(-E "$exclude")
  local limit=()
  [ -n "${TEST_SECONDS:-}" ] && limit=(timeout "$TEST_SECONDS")
  log "ctest ${args[*]} $*"
  set +e
  "${limit[@]}" ctest "${args[@]}" "$@" 2>&1 | tee_log ctest.txt | tail -40
  local rc=${PIPESTATUS[0]}
  set -e
  [ -f "$BUILD_DIR/Testing/Temporary/LastTestsFailed.log" ] \
    && cp "$BUILD_DIR/Testing/Temporary/LastTestsFailed.log" "${OUT:-/tmp}/ctest-failed.txt" || true
  [ "$rc" = 124 ] && die "ctest stopped after ${TEST_SECONDS}s (ctest.txt)"
  [ "$rc" = 0 ] || die "ctest failed (rc $rc; ctest.txt, ctest-failed.txt)"
  log "all tests passed in $(($(date +%s) - START)) s"
}

# Copies a stream into $OUT/NAME (when OUT is set) as it passes through.
tee_log() {
  if [ -n "${OUT:-}" ]; then tee -a "$OUT/$1"; else cat; fi
}

# ---------------------------------------------------------------------- main

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  pack) pack "$@" ;;
  build) build ;;
  test) run_tests "$@" ;;
  all)
    deadline="${SHEFL_GPU_DEADLINE:-570}"
    BUILD_SECONDS=$((deadline - 60)) build
    left=$((deadline - ($(date +%s) - START)))
    [ "$left" -ge 30 ] || die "built, but only ${left}s left: call scripts/gpu-build.sh test next"
    TEST_SECONDS=$left run_tests "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; die "unknown subcommand '${cmd}' (pack | build | test | all)" ;;
esac
