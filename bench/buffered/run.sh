#!/usr/bin/env bash
# Synchronous against buffered rounds with slow clients: wall time to an
# accuracy and accuracy after the same number of client updates.
#   bench/buffered/run.sh [CONFIG] [SEEDS] [DAEMONS] [--set key=value ...]
# CONFIG defaults to configs/quick-slow.yaml (30% of the clients 5x slower),
# SEEDS to "1 2", DAEMONS to 10. Each seed runs the config twice with
# `shefl run`, round.mode synchronous and buffered (the config's buffered.*
# settings); the --set pairs go to both, BUFFERED_SET="key=value ..." to
# the buffered runs alone (rounds=11 gives them quick-slow's 64 updates,
# 66). Prints bench/buffered/compare.py's table; results under $OUT
# (default /tmp/shefl-buffered-XXXXXX).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(bench_build_dir "$ROOT")"
CONFIG="${1:-$ROOT/configs/quick-slow.yaml}"
SEEDS="${2:-1 2}"
DAEMONS="${3:-10}"
shift 3 2>/dev/null || shift $#
OUT="${OUT:-$(mktemp -d /tmp/shefl-buffered-XXXXXX)}"
mkdir -p "$OUT"
export OPENBLAS_NUM_THREADS=1
for seed in $SEEDS; do
  for mode in synchronous buffered; do
    dir="$OUT/$mode-s$seed"
    only=()
    if [ "$mode" = buffered ]; then
      for kv in ${BUFFERED_SET:-}; do only+=(--set "$kv"); done
    fi
    echo "== $mode seed $seed -> $dir" >&2
    "$BUILD/bin/shefl" run "$CONFIG" --daemons "$DAEMONS" --out "$dir" \
      --set seed="$seed" --set round.mode="$mode" "$@" "${only[@]}" \
      >"$OUT/$mode-s$seed.log" 2>&1 \
      || { echo "run failed: $OUT/$mode-s$seed.log" >&2; exit 1; }
    # The checkpoints and daemon state are not needed for the figures.
    rm -rf "$dir/checkpoints" "$dir/daemons/state" "$dir/uploads"
  done
done
python3 "$ROOT/bench/buffered/compare.py" "$OUT"
