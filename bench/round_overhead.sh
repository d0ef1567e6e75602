#!/usr/bin/env bash
# The coordinator's own time per round (planning, pushing tasks, closing,
# aggregating, evaluating, checkpointing: everything but waiting for the
# clients) as a share of the round's wall time, in the paper's setting.
#   bench/round_overhead.sh [ROUNDS] [extra shefl run args...]
# Prints per-round figures and the median share. Needs a build (scripts/run.sh
# or scripts/test.sh builds one).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS="${1:-3}"; shift || true
OUT="$(mktemp -d /tmp/shefl-overhead-XXXXXX)"
export OPENBLAS_NUM_THREADS=1
[ -x "$ROOT/build/bin/shefl" ] || { echo "build first: scripts/test.sh or scripts/run.sh" >&2; exit 1; }
"$ROOT/build/bin/shefl" run "$ROOT/configs/fmnist-paper.yaml" --out "$OUT/run" \
  --set rounds="$ROUNDS" "$@"
python3 - "$OUT/run/rounds.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
shares = []
for r in rows:
    share = r["coordinator_seconds"] / r["wall_seconds"]
    shares.append(share)
    print(f'round {r["round"]}: wall {r["wall_seconds"]:.1f} s, coordinator {r["coordinator_seconds"]:.2f} s '
          f'({100*share:.1f}%; evaluation {r["eval_seconds"]:.2f} s), waiting {r["wait_seconds"]:.1f} s')
print(f"median coordinator share of round wall time: {100*statistics.median(shares):.1f}% over {len(rows)} rounds")
PY
echo "results: $OUT/run"
