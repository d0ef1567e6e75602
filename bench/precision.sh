#!/usr/bin/env bash
# bf16 against fp32 (train.precision and eval.precision), on this machine:
#   bench/precision.sh [ROUNDS] [SEEDS] [CONFIG] [extra shefl run args...]
# Runs CONFIG (default configs/quick.yaml) for ROUNDS rounds (default 10)
# with each seed in SEEDS (default "1 2"), once in fp32 and once in bf16,
# alternately. Prints per run the final ensemble accuracy, the training
# samples per second of the daemons (train_samples / train_seconds), the
# evaluation seconds a round, and the whole run's wall time; then the
# median speed-ups and the largest accuracy difference (target: within
# 0.3 points). Refused with a clear error on a CPU without AVX512_BF16 or
# AMX. Needs a build (scripts/test.sh or scripts/run.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS="${1:-10}"; SEEDS="${2:-1 2}"; CONFIG="${3:-$ROOT/configs/quick.yaml}"
shift $(( $# < 3 ? $# : 3 )) || true
OUT="$(mktemp -d /tmp/shefl-precision-XXXXXX)"
export OPENBLAS_NUM_THREADS=1
[ -x "$ROOT/build/bin/shefl" ] || { echo "build first: scripts/test.sh or scripts/run.sh" >&2; exit 1; }
for seed in $SEEDS; do
  for p in fp32 bf16; do
    echo "seed $seed, $p" >&2
    start=$(date +%s.%N)
    "$ROOT/build/bin/shefl" run "$CONFIG" --out "$OUT/$p-$seed" --set rounds="$ROUNDS" \
      --set seed="$seed" --set train.precision=$p --set eval.precision=$p "$@" \
      > "$OUT/$p-$seed.log" 2>&1 || { tail -5 "$OUT/$p-$seed.log" >&2; exit 1; }
    echo "$start $(date +%s.%N)" > "$OUT/$p-$seed.wall"
  done
done
/usr/bin/python3 - "$OUT" $SEEDS <<'PY'
import glob, json, os, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]
fig = {}
for seed in seeds:
    for p in ("fp32", "bf16"):
        run = os.path.join(out, "%s-%s" % (p, seed))
        rounds = lines(os.path.join(run, "rounds.jsonl"))
        daemon = [l for f in glob.glob(os.path.join(run, "daemons", "*.jsonl")) for l in lines(f)]
        a, b = map(float, open(run + ".wall").read().split())
        fig[(p, seed)] = (rounds[-1]["ensemble_accuracy"],
                          sum(d["train_samples"] for d in daemon) / sum(d["train_seconds"] for d in daemon),
                          statistics.median(r["eval_seconds"] for r in rounds), b - a)
        print("seed %s %s: accuracy %.4f after %d rounds, training %.0f samples/s, evaluation "
              "%.2f s a round, run %.1f s" % ((seed, p, fig[(p, seed)][0], len(rounds)) + fig[(p, seed)][1:]))
speed = statistics.median(fig[("bf16", s)][1] / fig[("fp32", s)][1] for s in seeds)
evals = statistics.median(fig[("fp32", s)][2] / fig[("bf16", s)][2] for s in seeds)
wall = statistics.median(fig[("fp32", s)][3] / fig[("bf16", s)][3] for s in seeds)
gap = max(abs(fig[("bf16", s)][0] - fig[("fp32", s)][0]) for s in seeds)
print("bf16 / fp32: training %.2fx the samples/s, evaluation %.2fx faster, whole run %.2fx faster; "
      "largest accuracy difference %.2f points (target <= 0.3)" % (speed, evals, wall, 100 * gap))
PY
echo "runs: $OUT"
