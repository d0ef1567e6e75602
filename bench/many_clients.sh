#!/usr/bin/env bash
# One daemon hosting 1,000 logical clients (500 HPC) on Fashion-MNIST: the
# round completes; prints round time, registration/startup time and the
# coordinator's and the daemon's peak RSS.
#   bench/many_clients.sh [ROUNDS]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS="${1:-2}"
OUT="$(mktemp -d /tmp/shefl-many-XXXXXX)"
export OPENBLAS_NUM_THREADS=1
[ -x "$ROOT/build/bin/shefl" ] || { echo "build first: scripts/test.sh or scripts/run.sh" >&2; exit 1; }
start=$(date +%s.%N)
"$ROOT/build/bin/shefl" run "$ROOT/configs/quick.yaml" --daemons 1 --out "$OUT/run" \
  --set name=many-clients --set rounds="$ROUNDS" \
  --set clients.num_clients=1000 --set clients.num_hpc=500 \
  --set clients.per_round_hpc=5 --set clients.per_round_lpc=5 \
  --set partition.alpha=0.6
end=$(date +%s.%N)
python3 - "$OUT/run" "$start" "$end" <<'PY'
import json, sys, glob
run, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rows = [json.loads(l) for l in open(run + "/rounds.jsonl") if l.strip()]
s = json.load(open(run + "/summary.json"))
d = [json.loads(l) for f in glob.glob(run + "/daemons/*.jsonl") for l in open(f) if l.strip()]
for r in rows:
    print(f'round {r["round"]}: {r["wall_seconds"]:.1f} s, {r["updates_accepted"]} updates, acc {r["ensemble_accuracy"]:.4f}')
print(f'whole run incl. start-up and registration of 1,000 clients: {end-start:.1f} s')
print(f'coordinator peak RSS: {s["coordinator_peak_rss_bytes"]/2**20:.0f} MiB')
print(f'daemon peak RSS: {max(x["peak_rss_bytes"] for x in d)/2**20:.0f} MiB')
PY
echo "results: $OUT/run"
