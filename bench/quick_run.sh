#!/usr/bin/env bash
# The default experiment's whole run, with the coordinator's evaluation on
# one thread against the default (one thread beside the training, all the
# cores once the coordinator waits for it: shefl run --eval-threads):
#   bench/quick_run.sh [SITTINGS] [extra shefl run args...]
# Runs `shefl run configs/quick.yaml` SITTINGS times (default 2) each way,
# alternately, and prints per run its wall time, the rounds' sum of
# record_wait_seconds, the last round's evaluation seconds and the final
# ensemble accuracy (the same either way); then the medians and their
# ratio, against the 45 s target. Extra arguments go to both runs, e.g.
# --set train.precision=bf16 --set eval.precision=bf16. Needs a build
# (scripts/test.sh or scripts/run.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(bench_build_dir "$ROOT")"
SITTINGS="${1:-2}"; shift || true
OUT="$(mktemp -d /tmp/shefl-quick-run-XXXXXX)"
export OPENBLAS_NUM_THREADS=1
for s in $(seq 1 "$SITTINGS"); do
  for way in one default; do
    echo "sitting $s/$SITTINGS: evaluation threads $way" >&2
    flags=(); [ "$way" = one ] && flags=(--eval-threads 1)
    start=$(date +%s.%N)
    "$BUILD/bin/shefl" run "$ROOT/configs/quick.yaml" --out "$OUT/$way-$s" \
      "${flags[@]}" "$@" > "$OUT/$way-$s.log" 2>&1 \
      || { tail -5 "$OUT/$way-$s.log" >&2; exit 1; }
    echo "$start $(date +%s.%N)" > "$OUT/$way-$s.wall"
  done
done
/usr/bin/python3 - "$OUT" "$SITTINGS" <<'PY'
import json, statistics, sys
out, sittings = sys.argv[1], int(sys.argv[2])
walls = {"one": [], "default": []}
for s in range(1, sittings + 1):
    for way in walls:
        a, b = map(float, open(f"{out}/{way}-{s}.wall").read().split())
        rows = [json.loads(l) for l in open(f"{out}/{way}-{s}/rounds.jsonl") if l.strip()]
        walls[way].append(b - a)
        print(f"sitting {s}, {way:7s}: {b - a:6.1f} s, record_wait "
              f"{sum(r['record_wait_seconds'] for r in rows):5.1f} s, last evaluation "
              f"{rows[-1]['eval_seconds']:5.1f} s, accuracy {rows[-1]['ensemble_accuracy']:.4f}")
one, new = statistics.median(walls["one"]), statistics.median(walls["default"])
print(f"median run: one evaluation thread {one:.1f} s, default {new:.1f} s "
      f"({new / one:.2f}x; target: under 45 s)")
PY
echo "runs: $OUT"
