#!/usr/bin/env bash
# Shared by scripts/run.sh and scripts/test.sh: installs the Debian packages
# that are missing (so a second run is quiet), then configures and builds
# into build/. SHEFL_SETUP=run (scripts/run.sh): what building and running
# need, and only the three binaries on a new build folder. SHEFL_SETUP=test
# (scripts/test.sh, the default): also the test, benchmark and deployment
# tools, and everything is built.
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
# suite (numpy, PyYAML, gRPC and protobuf for Python; mypy and typeshed's
# stubs for its type check; clang-format for the include order).
TEST_PACKAGES=(
  catch2 libbenchmark-dev git iproute2
  python3-numpy python3-yaml python3-grpcio python3-protobuf python3-torch
  python3-pip python3-venv python3-setuptools python3-wheel mypy python3-typeshed
  clang-14 libclang-rt-14-dev clang-format
  prometheus docker-compose ansible systemd gnuplot-nox
  podman podman-compose runc debootstrap containernetworking-plugins
  golang-github-containernetworking-plugin-dnsname dnsmasq-base iptables
)
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

# OpenBLAS is the BLAS LibTorch should find at run time (the reference BLAS
# made a CNN step 3.9x slower here). Make sure the alternative points at it.
select_openblas() {
  local lib=/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
  [ -e "$lib" ] || return 0
  local cur
  cur="$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null \
         | awk '/^Value:/{print $2}')"
  if [ "$cur" != "$lib" ]; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo update-alternatives --set libblas.so.3-x86_64-linux-gnu "$lib" >/dev/null 2>&1 || true
  fi
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
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "${options[@]}" >/dev/null
  echo "shefl: building ${targets[*]:-everything} in $BUILD_DIR ($jobs jobs; ninja's" \
       "[done/total] is the progress)" >&2
  cmake --build "$BUILD_DIR" -j "$jobs" "${targets[@]}"
  echo "shefl: built in $((SECONDS - start)) s" >&2
}

install_missing
select_openblas
build
# LibTorch 2.x's headers for torch2_test (not installed: unpacked into the
# build folder). A failed download leaves the build usable; the script says
# why and the test fails until the headers are there.
if [ "$MODE" = test ]; then
  "$ROOT/scripts/fetch_libtorch2.sh" "$BUILD_DIR/libtorch2" || true
fi

# One OpenBLAS thread; torch takes the cores (both threading: 2x slower).
export OPENBLAS_NUM_THREADS=1
