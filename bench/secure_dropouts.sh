#!/usr/bin/env bash
# A secure run that loses daemons for good mid-round: `shefl run CONFIG
# --daemons DAEMONS --max-restarts 0` with aggregation.secure on, and KILL
# of the daemons killed -9 as round KILL_AFTER+1 trains. Prints each
# round's secure sessions (outcome, survivors, dropped per model) and the
# final accuracy: every round should close, the round of the loss with
# the survivors' sum.
#   bench/secure_dropouts.sh [CONFIG] [DAEMONS] [KILL] [ROUNDS] [KILL_AFTER] [--set k=v ...]
# Defaults: configs/fmnist-paper.yaml, 10 daemons, 3 killed, 4 rounds,
# after round 1; clients.lost_after_s=5. Results under /tmp/shefl-secure-*.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONFIG="${1:-$ROOT/configs/fmnist-paper.yaml}"; shift || true
DAEMONS="${1:-10}"; shift || true
KILL="${1:-3}"; shift || true
ROUNDS="${1:-4}"; shift || true
KILL_AFTER="${1:-1}"; shift || true
BUILD="$(bench_build_dir "$ROOT")"
OUT="$(mktemp -d /tmp/shefl-secure-XXXXXX)"
export OPENBLAS_NUM_THREADS=1
dir="$OUT/run"
"$BUILD/bin/shefl" run "$CONFIG" --daemons "$DAEMONS" --max-restarts 0 \
  --out "$dir" --set rounds="$ROUNDS" --set aggregation.secure=common_support \
  --set clients.lost_after_s=5 "$@" >"$OUT/run.log" 2>&1 &
launcher=$!
until [ -f "$dir/rounds.jsonl" ] &&
      [ "$(wc -l <"$dir/rounds.jsonl")" -ge "$KILL_AFTER" ]; do
  kill -0 "$launcher" 2>/dev/null || { echo "shefl run ended early; see $OUT/run.log" >&2; exit 1; }
  sleep 0.5
done
for i in $(seq 1 "$KILL"); do
  # Every third daemon from daemon-1 on: spread over the clients.
  pid="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["daemons"][int(sys.argv[2])]["pid"])' \
         "$dir/endpoints.json" "$(( (3 * i - 2) % DAEMONS ))")"
  kill -9 "$pid"
done
echo "killed $KILL of $DAEMONS daemons as round $((KILL_AFTER + 1)) trained" >&2
wait "$launcher" || { echo "shefl run failed; see $OUT/run.log" >&2; exit 1; }
python3 - "$dir" <<'PY'
import json, sys
run = sys.argv[1]
for line in open(run + "/rounds.jsonl"):
    r = json.loads(line)
    parts = []
    for m, s in sorted(r.get("secure", {}).items()):
        if s.get("outcome") == "finished":
            parts.append(f"m{m} {s['survivors']}/{s['survivors'] + s['dropped']}")
        else:
            parts.append(f"m{m} {s.get('outcome')}")
    acc = r.get("ensemble_accuracy")
    print(f"round {r['round']}: " + "  ".join(parts) +
          (f"  acc {100 * acc:.1f}%" if acc is not None else ""))
s = json.load(open(run + "/summary.json"))
print(f"rounds {s['rounds']}; results in {run}")
PY
