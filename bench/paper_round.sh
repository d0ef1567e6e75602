#!/usr/bin/env bash
# The SHEFL paper round, ours against a plain PyTorch-eager script of it
# (bench/paper_round.py), run alternately in one sitting on this machine.
#   bench/paper_round.sh [SITTINGS] [ROUNDS] [extra shefl run args...]
# Defaults: 3 sittings of 3 rounds each. Prints each run's seconds per
# round, the medians, their ratio (ours / Python; the target is <= 0.7),
# and our coordinator's own share of the round. Needs a build
# (scripts/test.sh or scripts/run.sh) and python3-torch (installed here if
# missing, from Debian).
#
# Our time per round is the critical path of the run's rounds: the sum of
# their wall_seconds (open to close; evaluation of round t runs beside
# round t+1) plus the last round's evaluation, over the rounds. Python's is
# its own per-round wall time, training and evaluation included. Both
# hold OpenBLAS to one thread; Python keeps torch's default threads.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SITTINGS="${1:-3}"; shift || true
ROUNDS="${1:-3}"; shift || true
export OPENBLAS_NUM_THREADS=1
[ -x "$ROOT/build/bin/shefl" ] || { echo "build first: scripts/test.sh or scripts/run.sh" >&2; exit 1; }
if ! python3 -c 'import torch' 2>/dev/null; then
  echo "paper_round: installing python3-torch (Debian)" >&2
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
OUT="$(mktemp -d /tmp/shefl-paper-round-XXXXXX)"
for s in $(seq 1 "$SITTINGS"); do
  echo "sitting $s/$SITTINGS: shefl" >&2
  "$ROOT/build/bin/shefl" run "$ROOT/configs/fmnist-paper.yaml" --out "$OUT/ours-$s" \
    --set rounds="$ROUNDS" "$@" > "$OUT/ours-$s.log" 2>&1 \
    || { tail -20 "$OUT/ours-$s.log" >&2; exit 1; }
  echo "sitting $s/$SITTINGS: python" >&2
  python3 "$ROOT/bench/paper_round.py" --rounds "$ROUNDS" > "$OUT/python-$s.jsonl"
done
python3 - "$OUT" "$SITTINGS" <<'PY'
import json, statistics, sys
out, sittings = sys.argv[1], int(sys.argv[2])
ours, py, shares = [], [], []
for s in range(1, sittings + 1):
    rows = [json.loads(l) for l in open(f"{out}/ours-{s}/rounds.jsonl") if l.strip()]
    per_round = (sum(r["wall_seconds"] for r in rows) + rows[-1]["eval_seconds"]) / len(rows)
    share = sum(r["coordinator_seconds"] for r in rows) / sum(r["wall_seconds"] for r in rows)
    prow = [json.loads(l) for l in open(f"{out}/python-{s}.jsonl") if l.strip()]
    p = statistics.mean(r["seconds"] for r in prow)
    ours.append(per_round); py.append(p); shares.append(share)
    print(f"sitting {s}: shefl {per_round:.1f} s/round (acc {rows[-1]['ensemble_accuracy']:.3f}, "
          f"coordinator {100*share:.1f}%), python {p:.1f} s/round (acc {prow[-1]['accuracy']:.3f})")
mo, mp = statistics.median(ours), statistics.median(py)
print(f"median seconds per round: shefl {mo:.1f}, python {mp:.1f}; ratio shefl/python {mo/mp:.2f} "
      f"(target <= 0.70); coordinator's own share {100*statistics.median(shares):.1f}% (target < 5%)")
PY
echo "runs: $OUT"
