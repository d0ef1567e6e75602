#!/usr/bin/env bash
# What a daemon that leaves for good costs a run: the same config run twice
# with `shefl run --daemons 3 --max-restarts 0`, once as it is and once
# with daemon-1 killed -9 as round KILL_AFTER+1 trains; rounds run, wall
# time and final ensemble accuracy of both, and what summary.json books.
#   bench/lost_daemon.sh [CONFIG] [ROUNDS] [KILL_AFTER]
# CONFIG defaults to configs/quick.yaml, ROUNDS to 8, KILL_AFTER to 2.
# clients.lost_after_s is the default (60 s). Results under
# /tmp/shefl-lost-*.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONFIG="${1:-$ROOT/configs/quick.yaml}"
ROUNDS="${2:-8}"
KILL_AFTER="${3:-2}"
BUILD="$(bench_build_dir "$ROOT")"
OUT="$(mktemp -d /tmp/shefl-lost-XXXXXX)"
export OPENBLAS_NUM_THREADS=1

# run NAME KILL(0|1)
run() {
  local dir="$OUT/$1"
  "$BUILD/bin/shefl" run "$CONFIG" --daemons 3 --max-restarts 0 --out "$dir" \
    --set rounds="$ROUNDS" >"$OUT/$1.log" 2>&1 &
  local launcher=$!
  if [ "$2" -eq 1 ]; then
    until [ -f "$dir/rounds.jsonl" ] &&
          [ "$(wc -l <"$dir/rounds.jsonl")" -ge "$KILL_AFTER" ]; do sleep 0.5; done
    local pid
    pid="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["daemons"][1]["pid"])' \
           "$dir/endpoints.json")"
    kill -9 "$pid"
    echo "killed daemon-1 (pid $pid) after round $KILL_AFTER" >&2
  fi
  wait "$launcher" || { echo "$1: shefl run failed; see $OUT/$1.log" >&2; exit 1; }
}

echo "baseline run..." >&2
run baseline 0
echo "run with daemon-1 killed..." >&2
run lost 1
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
print("| run | rounds | wall s | final accuracy | clients lost |")
print("|---|---|---|---|---|")
for name in ("baseline", "lost"):
    s = json.load(open(f"{out}/{name}/summary.json"))
    rounds = [json.loads(l) for l in open(f"{out}/{name}/rounds.jsonl")]
    lost = "; ".join(f"{l['daemon']}: {len(l['clients'])} clients from round {l['round']}"
                     for l in s.get("clients_lost", [])) or "none"
    print(f"| {name} | {len(rounds)} | {s['wall_seconds']:.1f} | "
          f"{s['final_accuracy']:.4f} | {lost} |")
PY
echo "results in $OUT" >&2
