#!/usr/bin/env bash
# The long fuzz run: each libFuzzer target (fuzz/run-fuzzers.sh) for N
# minutes, on a corpus kept in build/fuzz-long/corpus between runs, then one
# line per target with its executions, speed, coverage and corpus size.
#   bench/fuzz_long.sh [MINUTES] [TARGET...]     (default 10 minutes, all)
# A crash stops nothing: every target runs, the script exits 1 at the end,
# and the input is under build/fuzz-long/artifacts/TARGET/. To keep what a
# run found as seeds, minimise it into the checked-in corpus:
#   build/fuzz-long/TARGET_fuzzer -merge=1 fuzz/corpus/TARGET \
#       build/fuzz-long/corpus/TARGET
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MINUTES="${1:-10}"
shift || true
BUILD="$ROOT/build/fuzz-long"
mkdir -p "$BUILD"

status=0
"$ROOT/fuzz/run-fuzzers.sh" --build-dir "$BUILD" --seconds $((MINUTES * 60)) \
  "$@" >"$BUILD.log" 2>&1 || status=1
grep -E 'ERROR|invariant broken|Test unit written' "$BUILD.log" || true
printf '%-10s %4s %12s %9s %6s %7s\n' target rc execs exec/s cov corpus
grep '^fuzz-summary ' "$BUILD.log" | while read -r _ fields; do
  declare -A f=()
  for kv in $fields; do f[${kv%%=*}]="${kv#*=}"; done
  corpus="$(find "$BUILD/corpus/${f[target]}" -type f | wc -l)"
  printf '%-10s %4s %12s %9s %6s %7s\n' "${f[target]}" "${f[rc]}" \
    "${f[execs]}" $(( ${f[execs]} / ${f[seconds]} )) "${f[cov]}" "$corpus"
done
echo "full log: $BUILD.log"
exit $status
