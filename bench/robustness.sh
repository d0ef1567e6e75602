#!/usr/bin/env bash
# One lying daemon among ten: final ensemble accuracy and the largest
# weight any member held, for each attack with aggregation.robust on and
# off, beside the clean run.
#   bench/robustness.sh [CONFIG] [ROUNDS] [MODES...]
# CONFIG defaults to configs/quick.yaml, ROUNDS to 10, MODES to
# "huge flip noise shard labels" (shefl-client --adversary; client/adversary.h).
# Ten daemons host the config's clients in equal ranges; daemon 0 lies.
# shard runs with aggregation.weight_by_samples on (otherwise a shard claim
# weighs nothing), labels with method hasa (the one that reads them); each
# of those gets its own clean run with the same settings.
# Prints a markdown table; results under /tmp/shefl-robust-*.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONFIG="${1:-$ROOT/configs/quick.yaml}"
ROUNDS="${2:-10}"
shift 2 2>/dev/null || shift $#
MODES=("$@")
[ ${#MODES[@]} -eq 0 ] && MODES=(huge flip noise shard labels)
BIN="$ROOT/build/bin"
[ -x "$BIN/shefl-coordinator" ] || { echo "build first: scripts/test.sh" >&2; exit 1; }
OUT="$(mktemp -d /tmp/shefl-robust-XXXXXX)"
export OPENBLAS_NUM_THREADS=1
N="$(python3 -c "import yaml,sys; print(yaml.safe_load(open(sys.argv[1]))['clients']['num_clients'])" "$CONFIG" 2>/dev/null || echo 20)"
PER=$(( N / 10 ))
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run NAME MODE [--set k=v ...]
run() {
  local name="$1" mode="$2"; shift 2
  local dir="$OUT/$name" port pids=()
  mkdir -p "$dir"
  port="$(free_port)"
  "$BIN/shefl-coordinator" --config "$CONFIG" --listen "127.0.0.1:$port" \
    --out "$dir/run" --threads 1 --insecure --set rounds="$ROUNDS" \
    --set round_deadline_s=120 "$@" >"$dir/c.log" 2>&1 &
  local c=$!
  for i in $(seq 0 9); do
    local lo=$(( i * PER )) hi=$(( i * PER + PER - 1 )) extra=()
    [ "$i" -eq 9 ] && hi=$(( N - 1 ))
    [ "$i" -eq 0 ] && [ "$mode" != none ] && extra=(--adversary "$mode")
    "$BIN/shefl-client" --coordinator "127.0.0.1:$port" --clients "$lo-$hi" \
      --name "d$i" --out "$dir/run/daemons" --threads 1 --insecure "${extra[@]}" \
      >"$dir/d$i.log" 2>&1 &
    pids+=($!)
  done
  # A coordinator that failed leaves its daemons retrying for ever.
  wait "$c" || { echo "$name: coordinator exited $?" >&2; kill "${pids[@]}" 2>/dev/null || true; }
  for p in "${pids[@]}"; do wait "$p" || true; done
  python3 - "$dir/run/rounds.jsonl" "$name" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
last = rows[-1]
w = max(r.get("max_abs_weight", 0) for r in rows)
ref = sum(r.get("refusals", {}).get("magnitude", 0) for r in rows)
rn = sum(r.get("robust", {}).get("refused_norm", 0) for r in rows)
cl = sum(r.get("robust", {}).get("clipped_norm", 0) for r in rows)
sb = max(r.get("robust", {}).get("shards_bounded", 0) for r in rows)
print(f"| {sys.argv[2]} | {len(rows)} | {last.get('ensemble_accuracy', float('nan')):.4f} "
      f"| {w:.3g} | {ref} | {rn} | {cl} | {sb} |")
PY
}

echo "| run | rounds | final accuracy | max abs weight | refused (magnitude) | left out (norm) | clipped | shards bounded |"
echo "|---|---|---|---|---|---|---|---|"
run clean none
for m in "${MODES[@]}"; do
  sets=()
  [ "$m" = shard ] && sets=(--set aggregation.weight_by_samples=true)
  [ "$m" = labels ] && sets=(--set method=hasa --set aggregation.rule=uniform)
  [ ${#sets[@]} -gt 0 ] && run "$m-clean" none "${sets[@]}"
  run "$m-on" "$m" "${sets[@]}"
  run "$m-off" "$m" "${sets[@]}" --set aggregation.robust=false
done
echo "results: $OUT"
