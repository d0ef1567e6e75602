#!/usr/bin/env bash
# Shared by scripts/run.sh and scripts/test.sh: installs the Debian packages
# that are missing (so a second run is quiet), then configures and builds
# into build/. SHEFL_SETUP=run (scripts/run.sh): what building and running
# need, and only the three binaries on a new build folder. SHEFL_SETUP=test
# (scripts/test.sh, the default): also the test, benchmark and deployment
# tools, and everything is built. In run mode, `--python-clients` among the
# arguments (scripts/run.sh passes shefl run's) also installs what the
# Python client needs and builds its modules.
# SHEFL_SETUP_TARGETS="A B": build those targets only (the fast loop).
# SHEFL_SETUP_DRY_RUN=1: print the packages and targets it would use, and
# stop (nothing installed or built).
# It supports Debian 12 (bookworm) on x86-64; elsewhere it stops and says
# so (SHEFL_ANY_OS=1 tries anyway; SHEFL_OS_RELEASE names another
# os-release file, for its test).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${SHEFL_BUILD_DIR:-$ROOT/build}"
MODE="${SHEFL_SETUP:-test}"

# Building and running: the compiler, the libraries, Fashion-MNIST.
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libopenblas0-pthread
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc protobuf-compiler
  libprotobuf-dev libabsl-dev libssl-dev zlib1g-dev
  prometheus-cpp-dev libyaml-cpp-dev nlohmann-json3-dev
  dataset-fashion-mnist
)
# The tests and benchmarks, and the tools they run: network namespaces,
# libFuzzer, Prometheus, compose and podman, Ansible and systemd's
# analyzers, gnuplot (shefl report's plots), and the Python client's
# suite (numpy, PyYAML, gRPC, protobuf and cryptography for Python; mypy and typeshed's
# stubs for its type check; clang-format for the include order).
TEST_PACKAGES=(
  catch2 libbenchmark-dev git iproute2
  python3-numpy python3-yaml python3-grpcio python3-protobuf python3-torch
  python3-cryptography python3-pip python3-venv python3-setuptools python3-wheel mypy python3-typeshed
  clang-14 libclang-rt-14-dev clang-format
  prometheus docker-compose ansible systemd gnuplot-nox
  podman podman-compose runc debootstrap containernetworking-plugins
  golang-github-containernetworking-plugin-dnsname dnsmasq-base iptables
)
# The Python client (python/, docs/PYTHON.md): PyTorch, gRPC and protobuf
# for Python, numpy, and cryptography (secure aggregation's primitives).
PYTHON_PACKAGES=(python3-torch python3-grpcio python3-protobuf python3-numpy
                 python3-cryptography)
WITH_PYTHON=0
if [ "$MODE" = run ]; then
  for a in "$@"; do
    case "$a" in --python-clients|--python-clients=*) WITH_PYTHON=1 ;; esac
  done
fi
[ "$WITH_PYTHON" = 1 ] && PACKAGES+=("${PYTHON_PACKAGES[@]}")
if [ "$MODE" = test ]; then
  PACKAGES+=("${TEST_PACKAGES[@]}")
  # kubectl renders deploy/k8s offline (`kubectl kustomize`): Debian's
  # kubernetes-client, unless a kubectl is already there (that package
  # would collide with it).
  command -v kubectl >/dev/null 2>&1 || PACKAGES+=(kubernetes-client)
fi

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "shefl: installing ${#missing[@]} Debian packages (the first time takes a few" \
       "minutes): ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  # apt's own lines (Get:, Unpacking, Setting up) are the progress.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
    --no-install-recommends "${missing[@]}"
}

# Debian 12 on x86-64 is what the package names and versions are for; on
# another system apt would fail half way.
check_os() {
  local id="" version="" arch release="${SHEFL_OS_RELEASE:-/etc/os-release}"
  if [ -r "$release" ]; then
    id="$(. "$release" && echo "${ID:-}")"
    version="$(. "$release" && echo "${VERSION_ID:-}")"
  fi
  arch="$(uname -m)"
  [ "$id" = debian ] && [ "$version" = 12 ] && [ "$arch" = x86_64 ] && return 0
  echo "shefl: this script installs Debian 12 (bookworm) packages on x86-64;" \
       "this system is ${id:-unknown} ${version:-?} on $arch." >&2
  if [ "${SHEFL_ANY_OS:-0}" != 1 ]; then
    echo "shefl: stopping before apt changes anything. Install the packages" \
         "listed in scripts/setup.sh your own way and build with cmake, or" \
         "set SHEFL_ANY_OS=1 to try anyway." >&2
    exit 1
  fi
  echo "shefl: SHEFL_ANY_OS=1: trying anyway." >&2
}

# OpenBLAS is the BLAS LibTorch should find at run time (the reference BLAS
# made a CNN step 3.9x slower). Installing libopenblas0-pthread makes it the
# system's choice unless someone chose another; that choice is the
# machine's (other software on a shared machine may rely on it), so this
# only says how to change it.
check_openblas() {
  local lib=/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
  [ -e "$lib" ] || return 0
  local cur
  cur="$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null \
         | awk '/^Value:/{print $2}')"
  [ -z "$cur" ] || [ "$cur" = "$lib" ] && return 0
  echo "shefl: warning: libblas.so.3 is $cur, not OpenBLAS: LibTorch's CPU" \
       "layers run up to 4x slower. To switch (for the whole machine):" \
       "sudo update-alternatives --set libblas.so.3-x86_64-linux-gnu $lib" >&2
}

# Let every clone share ccache's results: paths below ROOT are hashed
# relative to it, and the build folder is not part of the hash.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1

build() {
  local jobs start options=() targets=()
  jobs="$(nproc)"
  start=$SECONDS
  if [ "$MODE" = test ]; then
    options=(-DSHEFL_BUILD_TESTS=ON)
  elif [ ! -e "$BUILD_DIR/CMakeCache.txt" ]; then
    options=(-DSHEFL_BUILD_TESTS=OFF)  # a build folder of scripts/test.sh keeps its tests
  fi
  [ "$MODE" = run ] && targets=(--target shefl shefl-coordinator shefl-client)
  # SHEFL_SETUP_TARGETS: these targets only (scripts/test.sh --changed).
  [ -n "${SHEFL_SETUP_TARGETS:-}" ] && read -ra targets <<<"--target $SHEFL_SETUP_TARGETS"
  [ "$MODE" = run ] && [ "$WITH_PYTHON" = 1 ] && targets+=(shefl_python_stubs)
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "${options[@]}" >/dev/null
  echo "shefl: building ${targets[*]:-everything} in $BUILD_DIR ($jobs jobs; ninja's" \
       "[done/total] is the progress)" >&2
  cmake --build "$BUILD_DIR" -j "$jobs" "${targets[@]}"
  echo "shefl: built in $((SECONDS - start)) s" >&2
}

check_os
if [ "${SHEFL_SETUP_DRY_RUN:-0}" = 1 ]; then
  echo "packages: ${PACKAGES[*]}"
  [ "$MODE" = run ] && echo "targets: shefl shefl-coordinator shefl-client$(
    [ "$WITH_PYTHON" = 1 ] && echo " shefl_python_stubs")"
  [ "$MODE" = test ] && echo "targets: everything"
  exit 0
fi
install_missing
check_openblas
build
# LibTorch 2.x's headers for torch2_test (not installed: unpacked into the
# build folder). A failed download leaves the build usable; the script says
# why and the test fails until the headers are there.
if [ "$MODE" = test ]; then
  "$ROOT/scripts/fetch_libtorch2.sh" "$BUILD_DIR/libtorch2" || true
fi

# One OpenBLAS thread; torch takes the cores (both threading: 2x slower).
export OPENBLAS_NUM_THREADS=1
