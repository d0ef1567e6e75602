#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/clang, clang++-14, ASan + UBSan) and
# runs each: its checked-in corpus is replayed, then it fuzzes for a bounded
# time. Exits non-zero when a target crashes (the input is saved under
# BUILD/artifacts/TARGET/) or cannot be built.
#
#   fuzz/run-fuzzers.sh [--build-dir DIR] [--seconds N] [--build-only]
#                       [TARGET...]
#
# TARGET is codec, config, http_head, registry or upload (default: all).
# New inputs the fuzzer finds go to BUILD/corpus/TARGET, never into the
# source tree; bench/fuzz_long.sh is the long run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ALL_TARGETS=(codec config http_head registry upload)
BUILD="$ROOT/build/fuzz-clang"
SECONDS_EACH=10
BUILD_ONLY=0
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL_TARGETS[@]}")

# No skip without clang: a suite that quietly stops fuzzing is worse than
# one that fails.
CXX=clang++-14
if ! command -v "$CXX" >/dev/null; then
  echo "run-fuzzers: $CXX not found: install the Debian packages clang-14" \
       "and libclang-rt-14-dev (scripts/setup.sh does)" >&2
  exit 2
fi

# One build, however many targets run at once (ctest -j): the first waits
# for ninja, the rest find it up to date.
build() {
  mkdir -p "$BUILD"
  (
    flock 9
    export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    if [ ! -f "$BUILD/build.ninja" ]; then
      cmake -S "$ROOT/fuzz/clang" -B "$BUILD" -G Ninja \
        -DCMAKE_CXX_COMPILER="$CXX" "${launcher[@]}" >"$BUILD/configure.log" 2>&1 \
        || { cat "$BUILD/configure.log" >&2; exit 3; }
    fi
    ninja -C "$BUILD" >"$BUILD/build.log" 2>&1 \
      || { tail -n 40 "$BUILD/build.log" >&2; exit 3; }
  ) 9>"$BUILD/.lock"
}

# Runs one target; prints its libFuzzer log and a summary line.
run_one() {
  local t="$1" seeds="$ROOT/fuzz/corpus/$1"
  [ -d "$seeds" ] || { echo "run-fuzzers: no corpus $seeds" >&2; return 4; }
  local work="$BUILD/corpus/$t" art="$BUILD/artifacts/$t/"
  mkdir -p "$work" "$art"
  local log="$BUILD/$t.log" rc=0 dict=()
  [ -f "$ROOT/fuzz/$t.dict" ] && dict=(-dict="$ROOT/fuzz/$t.dict")
  # -timeout: an input taking 10 s is a hang (inputs take milliseconds;
  # the margin is for a loaded machine).
  # -rss_limit_mb also bounds any single allocation (malloc_limit_mb).
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
    "$BUILD/${t}_fuzzer" -max_total_time="$SECONDS_EACH" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art" "${dict[@]}" \
    "$work" "$seeds" >"$log" 2>&1 || rc=$?
  cat "$log"
  local execs cov seedfiles
  execs="$(awk '/stat::number_of_executed_units/{print $2}' "$log")"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | awk '{print $2}')"
  seedfiles="$(find "$seeds" -type f | wc -l)"
  echo "fuzz-summary target=$t rc=$rc execs=${execs:-0} cov=${cov:-0}" \
       "seeds=$seedfiles seconds=$SECONDS_EACH"
  return $rc
}

build
[ "$BUILD_ONLY" -eq 1 ] && exit 0
status=0
for t in "${TARGETS[@]}"; do
  run_one "$t" || status=1
done
exit $status
