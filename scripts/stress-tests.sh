#!/usr/bin/env bash
# Runs the whole ctest suite N times in a row while a compiler load runs
# beside it (two compile jobs rebuilding the common library without ccache,
# over and over), and reports every failure: the suite must not flake on a
# loaded 2-core machine.
#   scripts/stress-tests.sh [N=5] [extra ctest args...]
# Needs a build (scripts/test.sh makes one). Exit 0 only if all N runs pass.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SHEFL_BUILD_DIR:-$ROOT/build}"
RUNS="${1:-5}"; shift || true
[ -x "$BUILD/bin/shefl" ] || { echo "build first: scripts/test.sh" >&2; exit 1; }
export OPENBLAS_NUM_THREADS=1

LOAD_DIR="$(mktemp -d /tmp/shefl-load-XXXXXX)"
LOG_DIR="$(mktemp -d /tmp/shefl-stress-XXXXXX)"
cmake -S "$ROOT" -B "$LOAD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
set -m  # the load gets its own process group, so one kill stops all of it
( while :; do
    ninja -C "$LOAD_DIR" -t clean shefl_common >/dev/null 2>&1
    CCACHE_DISABLE=1 ninja -C "$LOAD_DIR" -j 2 shefl_common >/dev/null 2>&1
  done ) &
LOAD_PID=$!
set +m
cleanup() { kill -- -"$LOAD_PID" 2>/dev/null; wait "$LOAD_PID" 2>/dev/null; rm -rf "$LOAD_DIR"; }
trap cleanup EXIT

failed_runs=0
for i in $(seq 1 "$RUNS"); do
  start=$(date +%s)
  (cd "$BUILD" && ctest -j "$(nproc)" --output-on-failure "$@") >"$LOG_DIR/run-$i.log" 2>&1
  rc=$?
  summary="$(grep -E 'tests passed|tests failed' "$LOG_DIR/run-$i.log" | tail -1)"
  echo "run $i/$RUNS: ${summary:-no summary} ($(( $(date +%s) - start )) s)"
  if [ $rc -ne 0 ]; then
    failed_runs=$((failed_runs + 1))
    grep -E '^\s+[0-9]+ - ' "$LOG_DIR/run-$i.log" | sed 's/^/    failed: /'
  fi
done
echo "stress: $((RUNS - failed_runs))/$RUNS runs passed under load; logs in $LOG_DIR"
[ $failed_runs -eq 0 ]
