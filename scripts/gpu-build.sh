#!/usr/bin/env bash
# Builds and tests shefl on an NVIDIA GPU machine against its pip PyTorch's
# CUDA LibTorch. That machine needs cmake, ninja, g++, nvcc and PyTorch but
# neither apt nor network: Debian 12's gRPC, protobuf, abseil,
# prometheus-cpp and the rest travel with the checkout as unpacked .deb
# files (docs/GPU.md).
#
#   scripts/gpu-build.sh pack [--no-data]   on Debian 12 (or in a debian:12
#                                           container): fill .gpu/
#   scripts/gpu-build.sh detect             GPU machine: print the CUDA
#       architecture, nvcc and Torch prefix that build would use; builds nothing
#   scripts/gpu-build.sh build              GPU machine: configure + build build-gpu/
#   scripts/gpu-build.sh test [CTEST ARGS]  GPU machine: ctest with CUDA visible
#   scripts/gpu-build.sh all  [CTEST ARGS]  GPU machine: build, then test
#   scripts/gpu-build.sh bench              GPU machine: build only what the
#       figures need, run the CUDA tests, then every figure of
#       docs/PERFORMANCE.md's GPU section, the GPU beside the same machine's CPU
#
# With .gpu/ in the checkout, on the GPU machine:
#   OUT=gpu-logs bash scripts/gpu-build.sh all
#   OUT=gpu-logs bash scripts/gpu-build.sh bench   # gpu-logs/gpu-figures.md
#
# .gpu/ (git-ignored) is what travels: prefix.tar.xz (the Debian libraries,
# about 10 MB) and fashion-mnist/ (the data set, 30 MB). The prefix is
# unpacked into .gpu-prefix/, which never travels.
# Environment: SHEFL_CUDA_ARCH (the GPU's compute capability, 8.6 or 86;
# default: the first GPU's, from nvidia-smi; "none" builds without CUDA),
# CUDACXX (nvcc; default: nvcc on PATH, else $CUDA_HOME/bin/nvcc, CUDA_HOME
# defaulting to /usr/local/cuda),
# SHEFL_TORCH_PREFIX (a Torch CMake prefix instead of asking python3's
# torch), SHEFL_GPU_BUILD_DIR (default build-gpu), SHEFL_GPU_TARGETS (ninja
# targets to build; default everything), SHEFL_GPU_DEADLINE (seconds `all`
# or `bench` may take; default none: a build stopped by it resumes when the
# same command is run again), SHEFL_GPU_CTEST_EXCLUDE (ctest -E regex of
# tests that need tools only Debian has; empty runs everything),
# SHEFL_GPU_RUN_ARGS (more arguments for bench's `shefl run`s, e.g. --set
# train.stacking=off), SHEFL_GPU_PREFIX (where the prefix is unpacked;
# default .gpu-prefix), OUT (logs are copied there when set).
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
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
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
  local carry; carry=$(du -sb "$CARRY" | cut -f1)
  # The tracked tree's size, when git can list it (inside a container git
  # may refuse a checkout that another user owns): only for the message.
  local tree
  if tree=$(cd "$ROOT" && git ls-files -z 2>/dev/null | xargs -0 du -cb 2>/dev/null \
              | tail -1 | cut -f1) && [ -n "$tree" ]; then
    log "$(du -h "$TARBALL" | cut -f1) $TARBALL; .gpu/ $((carry / 1048576)) MiB +" \
        "tracked tree $((tree / 1048576)) MiB = $(((carry + tree) / 1048576)) MiB to copy"
  else
    log "$(du -h "$TARBALL" | cut -f1) $TARBALL; .gpu/ $((carry / 1048576)) MiB"
  fi
  echo "next: on the GPU machine, with .gpu/ in the checkout: bash scripts/gpu-build.sh all"
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

# ------------------------------------------------- detect (the GPU machine)
# What build gives CMake for CUDA. Each function prints its answer, or says
# what it tried and fails (in $(...) only that subshell exits).

# The CUDA architecture as TORCH_CUDA_ARCH_LIST spells it ("8.6"):
# SHEFL_CUDA_ARCH (8.6 or 86; "none": no CUDA), else the compute capability
# of the first GPU nvidia-smi lists.
cuda_arch() {
  local a="${SHEFL_CUDA_ARCH:-}"
  if [ -z "$a" ]; then
    command -v nvidia-smi >/dev/null 2>&1 \
      || die "no CUDA architecture: SHEFL_CUDA_ARCH is unset and nvidia-smi is not on" \
             "PATH; set SHEFL_CUDA_ARCH to the GPU's compute capability, e.g." \
             "SHEFL_CUDA_ARCH=8.6 (SHEFL_CUDA_ARCH=none builds without CUDA)"
    local out rc=0
    out=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>&1) || rc=$?
    a=$(head -n 1 <<<"$out" | tr -d ' \r')
    if [ "$rc" != 0 ] || ! [[ "$a" =~ ^[0-9]+\.[0-9]$ ]]; then
      die "no CUDA architecture: \`nvidia-smi --query-gpu=compute_cap\` gave" \
          "'$(head -n 1 <<<"$out")' (rc $rc; no GPU visible, or a driver too old for" \
          "that field); set SHEFL_CUDA_ARCH to the GPU's compute capability, e.g." \
          "SHEFL_CUDA_ARCH=8.6"
    fi
  fi
  if [ "$a" = none ]; then
    echo none
  elif [[ "$a" =~ ^[0-9]+\.[0-9]$ ]]; then
    echo "$a"
  elif [[ "$a" =~ ^[0-9]{2,3}$ ]]; then
    echo "${a%?}.${a: -1}"
  else
    die "SHEFL_CUDA_ARCH='$a' is not a compute capability such as 8.6 or 86 (or none)"
  fi
}

# Where SHEFL_CUDA_ARCH or nvidia-smi's answer came from, for detect.
cuda_arch_source() {
  if [ -n "${SHEFL_CUDA_ARCH:-}" ]; then echo SHEFL_CUDA_ARCH; else echo "nvidia-smi, first GPU"; fi
}

# nvcc: CUDACXX (a path, or a name on PATH), else nvcc on PATH, else
# the toolkit's default place, $CUDA_HOME/bin/nvcc (/usr/local/cuda/bin/nvcc).
find_nvcc() {
  local p home="${CUDA_HOME:-/usr/local/cuda}"
  if [ -n "${CUDACXX:-}" ]; then
    p=$(command -v "$CUDACXX" 2>/dev/null) && [ -x "$p" ] && { echo "$p"; return; }
    die "CUDACXX='$CUDACXX' is not an executable nvcc"
  fi
  p=$(command -v nvcc 2>/dev/null) && { echo "$p"; return; }
  [ -x "$home/bin/nvcc" ] && { echo "$home/bin/nvcc"; return; }
  die "no nvcc: CUDACXX is unset, there is no nvcc on PATH and no" \
      "$home/bin/nvcc; install the CUDA toolkit or set CUDACXX=/path/to/nvcc" \
      "(SHEFL_CUDA_ARCH=none builds without CUDA)"
}

nvcc_source() {
  if [ -n "${CUDACXX:-}" ]; then echo CUDACXX
  elif command -v nvcc >/dev/null 2>&1; then echo PATH
  else echo "${CUDA_HOME:+CUDA_HOME, }the toolkit's default place"; fi
}

# The CMake -D options for CUDA, one a line (none with SHEFL_CUDA_ARCH=none).
cuda_options() {
  local arch nvcc
  arch=$(cuda_arch) || exit 1
  [ "$arch" = none ] && return 0
  nvcc=$(find_nvcc) || exit 1
  # CMake ignores CUDA_HOME; without an architecture nvcc 13 is given old
  # ones it rejects when CMake sees no GPU at configure time.
  echo "-DCMAKE_CUDA_COMPILER=$nvcc"
  echo "-DTORCH_CUDA_ARCH_LIST=$arch"
  echo "-DCMAKE_CUDA_ARCHITECTURES=${arch/./}"
}

# Prints what build would use, and fails (naming what to set) when one of
# the three cannot be found. Builds nothing.
detect() {
  local rc=0 arch nvcc torch
  if arch=$(cuda_arch); then
    if [ "$arch" = none ]; then
      echo "arch: none (SHEFL_CUDA_ARCH=none: built without CUDA)"
    else
      echo "arch: $arch (from $(cuda_arch_source)): TORCH_CUDA_ARCH_LIST=$arch" \
           "CMAKE_CUDA_ARCHITECTURES=${arch/./}"
    fi
  else
    rc=1
  fi
  if [ "${arch:-}" = none ]; then
    echo "nvcc: not used"
  elif nvcc=$(find_nvcc); then
    echo "nvcc: $nvcc (from $(nvcc_source)): $("$nvcc" --version 2>/dev/null \
          | grep -o 'release [0-9.]*' | head -1 || true)"
  else
    rc=1
  fi
  if torch=$(torch_prefix); then
    echo "torch prefix: $torch (from $([ -n "${SHEFL_TORCH_PREFIX:-}" ] \
          && echo SHEFL_TORCH_PREFIX || echo "python3's torch"))"
  else
    rc=1
  fi
  # The options configure passes, from the same functions.
  # shellcheck disable=SC2046  # one option a line, printed on one line
  [ "$rc" = 0 ] && echo "cmake:" $(cuda_options) "-DCMAKE_PREFIX_PATH=$torch"
  return "$rc"
}

# ------------------------------------------------- build (the GPU machine)

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
  command -v nvidia-smi >/dev/null && nvidia-smi -L || true
  local nvcc
  nvcc=$(find_nvcc 2>/dev/null) && echo "nvcc $nvcc: $("$nvcc" --version | tail -2 | tr '\n' ' ')" || true
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
}

build() {
  configure
  # shellcheck disable=SC2086  # SHEFL_GPU_TARGETS: ninja targets, split
  compile ${SHEFL_GPU_TARGETS:-}
  check_binary
  log "build done in $(($(date +%s) - START)) s"
}

# Unpacks the prefix, reports on torch and configures BUILD_DIR.
configure() {
  local torch opts cuda=()
  torch="$(torch_prefix)" || exit 1
  opts="$(cuda_options)" || exit 1
  [ -z "$opts" ] || mapfile -t cuda <<<"$opts"
  need_prefix
  torch_report 2>&1 | tee_log torch.txt
  # protoc and grpc_cpp_plugin have no RUNPATH; configure and build run them.
  export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "configuring $BUILD_DIR (prefix $PREFIX, torch $torch${cuda[*]:+, ${cuda[*]}})"
  set +e
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSHEFL_PREFIX="$PREFIX" -DCMAKE_PREFIX_PATH="$torch" \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 "${cuda[@]}" 2>&1 | tee_log configure.txt
  local rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" = 0 ] || die "configure failed (rc $rc; log: configure.txt)"
}

# Builds the given ninja targets (none: everything) with all cores, within
# BUILD_SECONDS when set.
compile() {
  local jobs; jobs="$(nproc)"
  local limit=()
  [ -n "${BUILD_SECONDS:-}" ] && limit=(timeout "$BUILD_SECONDS")
  local blog="${OUT:-$BUILD_DIR}/build.txt"
  log "building ${*:-everything} with $jobs jobs (log: $blog)"
  set +e
  "${limit[@]}" cmake --build "$BUILD_DIR" -j "$jobs" -- "$@" >"$blog" 2>&1
  local rc=$?
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

# ------------------------------------------------------------ bench (there)
# What the GPU figures of docs/PERFORMANCE.md need, and nothing else: the three
# binaries, the CUDA tests and the benches. A bench this tree lacks is
# skipped with a line saying so.
BENCH_TARGETS=(shefl shefl-coordinator shefl-client topk_cuda_test compress_test
               cohort_cuda_test topk_gpu_bench stacked_train_bench op_count_bench)
FIGURES_SECONDS=300  # with SHEFL_GPU_DEADLINE: kept from the build for the steps
SUMMARY_SECONDS=10   # with SHEFL_GPU_DEADLINE: kept from the steps for the summary
DEADLINE=""          # bench: SHEFL_GPU_DEADLINE, empty for none

elapsed() { echo $(($(date +%s) - START)); }
progress() { log "[$(printf '%3d' "$(elapsed)") s] $*"; }
seconds_left() { echo $((DEADLINE - $(elapsed))); }

# Fails before anything is built where no GPU can be measured.
bench_preflight() {
  [ "${CUDA_VISIBLE_DEVICES-unset}" = "" ] && unset CUDA_VISIBLE_DEVICES
  command -v python3 >/dev/null || die "bench: no python3 (it writes the summary)"
  if [ -z "${SHEFL_TORCH_PREFIX:-}" ]; then
    python3 -c 'import torch' 2>/dev/null \
      || die "bench measures a GPU: python3 has no torch (a pip PyTorch with CUDA" \
             "is what build links); nothing was built"
    python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null \
      || die "bench measures a GPU: python3's torch $(python3 -c \
             'import torch; print(torch.__version__, "cuda", torch.version.cuda)' \
             2>/dev/null) sees no CUDA device; nothing was built"
  else
    nvidia-smi -L >/dev/null 2>&1 \
      || die "bench measures a GPU: nvidia-smi sees none; nothing was built"
  fi
  [ -n "$(fmnist_root)" ] || die "bench: no Fashion-MNIST in" \
    "/usr/share/datasets/fashion-mnist or $CARRY/fashion-mnist (pack without --no-data)"
}

# Where the runs read Fashion-MNIST: Debian's folder, else the carried one.
fmnist_root() {
  local d
  for d in /usr/share/datasets/fashion-mnist "$CARRY/fashion-mnist"; do
    [ -d "$d" ] && { echo "$d"; return; }
  done
  true
}

# The targets of BENCH_TARGETS that this tree has (after configure).
known_targets() {
  local t
  for t in "${BENCH_TARGETS[@]}"; do
    if grep -q "^build $t: phony" "$BUILD_DIR/build.ninja"; then
      echo "$t"
    else
      progress "$t: no such target in this tree, not built (its figures are skipped)"
    fi
  done
}

bench_build() {
  progress "build: configure, then ${#BENCH_TARGETS[@]} targets at most"
  configure
  local targets; mapfile -t targets < <(known_targets)
  if [ -n "$DEADLINE" ]; then
    BUILD_SECONDS=$((DEADLINE - FIGURES_SECONDS - $(elapsed)))
    [ "$BUILD_SECONDS" -ge 60 ] || die "only ${BUILD_SECONDS}s left to build:" \
      "raise SHEFL_GPU_DEADLINE (now $DEADLINE) or unset it"
  fi
  compile "${targets[@]}"
  check_binary
  progress "build: done"
}

# step NAME CAP COMMAND...: runs COMMAND for at most CAP seconds (and, with
# SHEFL_GPU_DEADLINE, what is left before it); its output goes to
# STEPS/NAME.txt and bench.txt, its rc and wall seconds to STEPS/NAME.rc
# and NAME.wall.
step() {
  local name="$1" cap="$2"; shift 2
  if [ -n "$DEADLINE" ]; then
    local left=$(($(seconds_left) - SUMMARY_SECONDS))
    if [ "$left" -lt 15 ]; then
      progress "$name: skipped, ${left}s left before SHEFL_GPU_DEADLINE ($DEADLINE)"
      echo skipped >"$STEPS/$name.rc"
      return 0
    fi
    [ "$cap" -le "$left" ] || cap=$left
  fi
  progress "$name: $* (at most ${cap}s)"
  local t0 rc=0; t0=$(date +%s.%N)
  timeout -k 5 "$cap" "$@" >"$STEPS/$name.txt" 2>&1 || rc=$?
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' >"$STEPS/$name.wall"
  echo "$rc" >"$STEPS/$name.rc"
  { echo "### $name (rc $rc, $(cat "$STEPS/$name.wall") s): $*"; cat "$STEPS/$name.txt"; echo; } \
    >>"$BENCH_LOG"
  if [ "$rc" = 0 ]; then
    progress "$name: done in $(cat "$STEPS/$name.wall") s"
  else
    tail -5 "$STEPS/$name.txt" >&2
    progress "$name: FAILED (rc $rc$([ "$rc" = 124 ] && echo ', timed out'))"
  fi
}

# bench_step NAME CAP BENCH ARGS...: a bench of BUILD_DIR/bin, if built.
bench_step() {
  local name="$1" cap="$2" bin="$BUILD_DIR/bin/$3"; shift 3
  if [ ! -x "$bin" ]; then
    progress "$name: $(basename "$bin") not built in this tree, skipped"
    echo absent >"$STEPS/$name.rc"
    return 0
  fi
  step "$name" "$cap" "$bin" "$@"
}

# shefl_run NAME CONFIG ROUNDS DEVICE [ARGS...]: one `shefl run`, results
# in RUNS/NAME.
shefl_run() {
  local name="$1" config="$2" rounds="$3" device="$4"; shift 4
  local data=() extra=()
  [ "$(fmnist_root)" = /usr/share/datasets/fashion-mnist ] \
    || data=(--set "data.root=$(fmnist_root)")
  # shellcheck disable=SC2206  # SHEFL_GPU_RUN_ARGS: arguments, split
  extra=(${SHEFL_GPU_RUN_ARGS:-})
  step "$name" 90 "$BUILD_DIR/bin/shefl" run "$ROOT/configs/$config" \
    --out "$RUNS/$name" --set "rounds=$rounds" --device "$device" \
    "${data[@]}" "${extra[@]}" "$@"
}

bench_tests() {
  bench_step topk_cuda_test 120 topk_cuda_test
  bench_step compress_test_cuda 60 compress_test '[cuda]'
  bench_step cohort_cuda_test 120 cohort_cuda_test
}

bench_runs() {
  shefl_run quick_cuda quick.yaml 8 cuda
  shefl_run quick_cpu quick.yaml 8 cpu
  shefl_run paper_cuda fmnist-paper.yaml 2 cuda
  shefl_run paper_cpu fmnist-paper.yaml 2 cpu
  shefl_run quick_cuda_d4 quick.yaml 8 cuda --daemons 4
}

# On the CPU the benches use one thread (thread CPU time): per core.
bench_benches() {
  bench_step stacked_cuda 60 stacked_train_bench cuda 200 3 cnn 1
  bench_step stacked_cpu 60 stacked_train_bench cpu 50 3 cnn 1
  bench_step stacked_m_cuda 90 stacked_train_bench cuda 50 3 cnn 2,5,10
  bench_step stacked_m_cpu 90 stacked_train_bench cpu 20 3 cnn 2,5,10
  step eager_cuda 90 python3 "$ROOT/bench/gpu_train_eager.py" --device cuda \
    --steps 200 --sittings 3 --models cnn
  step eager_cpu 90 env OMP_NUM_THREADS=1 python3 "$ROOT/bench/gpu_train_eager.py" \
    --device cpu --steps 50 --sittings 3 --models cnn
  bench_step topk_cuda 120 topk_gpu_bench --reps=5 --cuda
  bench_step topk_cpu 90 topk_gpu_bench --reps=3 --cpu --max_d=11173962
  local paper="--config=$ROOT/configs/fmnist-paper.yaml"
  bench_step op_count_cuda 90 op_count_bench --device=cuda --epochs=1 "$paper"
  bench_step op_count_cpu 90 op_count_bench --device=cpu --epochs=1 "$paper"
}

# What the summary's heading says: date, GPU, commit, cores, torch, and
# train.stacking as the runs resolved it.
bench_meta() {
  local gpu commit stacking
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  if commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null); then
    git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || commit="$commit + local changes"
  else
    commit="not a git checkout"
  fi
  stacking=$("$BUILD_DIR/bin/shefl" config "$ROOT/configs/quick.yaml" 2>/dev/null \
             | sed -n 's/^ *stacking: *//p' | head -1 | tr -d '"')
  echo "date=$(date +%Y-%m)"
  echo "gpu=${gpu:-unknown GPU}"
  echo "commit=$commit"
  echo "cores=$(nproc)"
  echo "torch=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo '?')"
  echo "stacking=${stacking:-absent (this tree has no train.stacking)}"
}

bench() {
  DEADLINE="${SHEFL_GPU_DEADLINE:-}"
  bench_preflight
  [ -z "${OUT:-}" ] || mkdir -p "$OUT"
  bench_build
  local dir="$BUILD_DIR/bench"
  STEPS="$dir/steps" RUNS="$dir/runs" BENCH_LOG="${OUT:-$dir}/bench.txt"
  rm -rf "$dir" && mkdir -p "$STEPS" "$RUNS"
  : >"$BENCH_LOG"
  export OPENBLAS_NUM_THREADS=1
  bench_tests
  bench_runs
  bench_benches
  local md="${OUT:-$dir}/gpu-figures.md"
  bench_meta >"$STEPS/meta"
  bench_summary >"$md" \
    || die "the summary failed (steps in $STEPS, log $BENCH_LOG)"
  cat "$md"
  progress "figures in $md, every step's output in $BENCH_LOG"
  local t
  for t in topk_cuda_test compress_test_cuda cohort_cuda_test; do
    grep -qxE '0|absent' "$STEPS/$t.rc" 2>/dev/null || die "$t did not pass ($BENCH_LOG)"
  done
}

# The summary: markdown, the table ready for docs/PERFORMANCE.md's GPU figures, the
# targets, then the raw tables of the benches. Reads STEPS and RUNS.
bench_summary() {
  python3 - "$STEPS" "$RUNS" <<'PY'
import json, os, re, sys

steps, runs = sys.argv[1], sys.argv[2]
meta = dict(l.rstrip("\n").split("=", 1) for l in open(f"{steps}/meta") if "=" in l)

def read(name, ext):
    try:
        return open(f"{steps}/{name}.{ext}").read().strip()
    except OSError:
        return None

def status(name):  # None when the step ran and passed, else why not
    rc = read(name, "rc")
    if rc is None:
        return "not run"
    if rc == "skipped":
        return "not measured (deadline)"
    if rc == "absent":
        return "not measured (bench not in this tree)"
    return None if rc == "0" else f"failed (rc {rc}{', timed out' if rc == '124' else ''})"

def rounds(name):
    try:
        return [json.loads(l) for l in open(f"{runs}/{name}/rounds.jsonl") if l.strip()]
    except OSError:
        return []

def mean_round(name):
    r = rounds(name)
    return sum(x["wall_seconds"] for x in r) / len(r) if r and status(name) is None else None

def run_cell(name):
    bad, r = status(name), rounds(name)
    if bad or not r:
        return bad or "no rounds.jsonl"
    each = ", ".join(f"{x['wall_seconds']:.1f}" for x in r)
    return (f"{float(read(name, 'wall')):.1f} s, {mean_round(name):.2f} s a round "
            f"({each}), {100 * r[-1]['ensemble_accuracy']:.1f}%")

STACKED = re.compile(r"^(\S+)\s+M=(\d+)\s+sequential\s+([\d.]+) member-steps/s "
                     r"\(([\d.]+) ms each\), stacked\s+([\d.]+) member-steps/s "
                     r"\(([\d.]+) ms each\): ([\d.]+)x")

def stacked(name):
    return [m.groups() for m in map(STACKED.match, (read(name, "txt") or "").splitlines()) if m]

def one_thread(cell, name):
    return cell if status(name) else cell + " (one thread)"

def one_member_cell(name):
    rows = stacked(name)
    if status(name) or not rows:
        return status(name) or "no figure in its output"
    _, _, seq, ms, *_ = rows[0]
    return f"{float(seq):.0f} member-steps/s ({float(ms):.2f} ms a step of 16 samples)"

def members_cell(name):
    rows = stacked(name)
    if status(name) or not rows:
        return status(name) or "no figure in its output"
    return (", ".join(f"{float(r[6]):.2f}x" for r in rows)
            + f" (M = {', '.join(r[1] for r in rows)})")

def eager_cell(name):
    m = re.search(r"^cnn: (\d+) samples/s", read(name, "txt") or "", re.M)
    if status(name) or not m:
        return status(name) or "no figure in its output"
    return f"{int(m.group(1)) / 16:.0f} member-steps/s ({m.group(1)} samples/s)"

def topk_row(name, d="11173962"):
    for l in (read(name, "txt") or "").splitlines():
        f = l.split()
        if len(f) >= 9 and f[0] == d and f[1] == "0.10":
            return f
    return None

def topk_cuda_cell():
    f = topk_row("topk_cuda")
    if status("topk_cuda") or not f:
        return status("topk_cuda") or "no figure in its output"
    if len(f) < 11:  # a tree before ours_dev and topk+idx
        return (f"ours {f[3]} ms, at::topk {f[4]} ms, {100 * float(f[7]):.0f}% of one read "
                f"({f[6]} GB/s), {f[9] if len(f) > 9 else ''}")
    return (f"ours {f[3]} ms to the host, {f[4]} ms on the device; at::topk {f[5]} ms, "
            f"{f[6]} ms with indices sorted and values; on the device "
            f"{100 * float(f[9]):.0f}% of one read ({f[8]} GB/s), {f[10]}")

def topk_cpu_cell():
    f = topk_row("topk_cpu")
    if status("topk_cpu") or not f:
        return status("topk_cpu") or "no figure in its output"
    return f"radix {f[4]} ms, at::topk {f[6]} ms (one thread)"

def tests_cell():
    out = []
    for name, what in (("topk_cuda_test", "topk_cuda_test"),
                       ("compress_test_cuda", "compress_test [cuda]"),
                       ("cohort_cuda_test", "cohort_cuda_test")):
        last = [l for l in (read(name, "txt") or "").splitlines()
                if re.match(r"(All tests passed|test cases)", l)]
        out.append(f"{what}: {status(name) or 'passed'}"
                   + (f" ({last[-1].strip()})" if last else ""))
    return "; ".join(out)

def targets():
    lines = []
    q = read("quick_cuda", "wall") if status("quick_cuda") is None else None
    if q:
        lines.append(f"- quick.yaml, 8 rounds, at most 8 s: {float(q):.1f} s, "
                     + ("met" if float(q) <= 8 else "not met"))
    g, c = mean_round("paper_cuda"), mean_round("paper_cpu")
    if g:
        lines.append(f"- fmnist-paper.yaml, at most 1.0 s a round (stretch 0.5 s): "
                     f"{g:.2f} s, " + ("met" if g <= 1.0 else "not met"))
    if g and c:
        lines.append(f"- fmnist-paper.yaml, at least 8x the CPU's rounds: {c / g:.1f}x, "
                     + ("met" if c / g >= 8 else "not met"))
    for run in ("quick", "paper"):
        a, b = rounds(f"{run}_cuda"), rounds(f"{run}_cpu")
        if a and b:
            lines.append(f"- accuracy as on the CPU, {run}: "
                         f"{100 * a[-1]['ensemble_accuracy']:.1f}% on cuda, "
                         f"{100 * b[-1]['ensemble_accuracy']:.1f}% on cpu")
    return lines or ["- no run finished"]

def raw(name, title, tail=40):
    text = read(name, "txt")
    if not text:
        return [f"{title}: {status(name) or 'no output'}", ""]
    return [f"{title} ({status(name) or 'rc 0'}):", "", "```",
            *text.splitlines()[-tail:], "```", ""]

print(f"### {meta['date']}, {meta['gpu']}, commit {meta['commit']}\n")
print(f"{meta['cores']} CPU cores beside it; torch {meta['torch']}; "
      f"train.stacking: {meta['stacking']}. Whole runs: wall time of `shefl run`, "
      "its rounds' wall_seconds (rounds.jsonl) and the last ensemble accuracy. "
      "The benches use one CPU thread.\n")
print(f"| run | --device cuda | --device cpu ({meta['cores']} cores) |")
print("|---|---|---|")
rows = [
    ("configs/quick.yaml, 8 rounds", run_cell("quick_cuda"), run_cell("quick_cpu")),
    ("configs/quick.yaml, 8 rounds, --daemons 4", run_cell("quick_cuda_d4"), ""),
    ("configs/fmnist-paper.yaml, 2 rounds", run_cell("paper_cuda"), run_cell("paper_cpu")),
    ("stacked_train_bench, cnn, 1 member", one_member_cell("stacked_cuda"),
     one_thread(one_member_cell("stacked_cpu"), "stacked_cpu")),
    ("PyTorch eager, same cnn (bench/gpu_train_eager.py)", eager_cell("eager_cuda"),
     one_thread(eager_cell("eager_cpu"), "eager_cpu")),
    ("stacked members, cnn, stacked / sequential", members_cell("stacked_m_cuda"),
     one_thread(members_cell("stacked_m_cpu"), "stacked_m_cpu")),
    ("top-k, 11.2M floats, k = 0.1 d", topk_cuda_cell(), topk_cpu_cell()),
]
for r in rows:
    print("| " + " | ".join(r) + " |")
print(f"\nCUDA tests: {tests_cell()}\n\nTargets:\n")
print("\n".join(targets()) + "\n")
for name, title in (("op_count_cuda", "op_count_bench --device=cuda --epochs=1"),
                    ("op_count_cpu", "op_count_bench --device=cpu --epochs=1"),
                    ("topk_cuda", "topk_gpu_bench --reps=5 --cuda")):
    print("\n".join(raw(name, title)))
PY
}

# ---------------------------------------------------------------------- main

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  pack) pack "$@" ;;
  build) build ;;
  test) run_tests "$@" ;;
  all)
    if [ -n "${SHEFL_GPU_DEADLINE:-}" ]; then
      # Opt-in, for machines that limit how long a command may run: the
      # build gets the deadline less 60 s, the tests what is left.
      deadline="$SHEFL_GPU_DEADLINE"
      BUILD_SECONDS=$((deadline - 60)) build
      left=$((deadline - ($(date +%s) - START)))
      [ "$left" -ge 30 ] || die "built, but only ${left}s left: call scripts/gpu-build.sh test next"
      TEST_SECONDS=$left run_tests "$@"
    else
      build
      run_tests "$@"
    fi ;;
  bench) bench ;;
  detect) detect ;;
  -h|--help|help) usage ;;
  *) usage >&2; die "unknown subcommand '${cmd}' (pack | detect | build | test | all | bench)" ;;
esac
