#!/usr/bin/env bash
# One daemon hosting 1,000 logical clients (500 HPC) on Fashion-MNIST, 100
# of them a round (50 HPC + 50 LPC; an HPC trains all 5 models): the
# coordinator at scale. Prints per round the wall time,
# the coordinator's own time (planning, pushing tasks, closing and
# aggregating: coordinator_seconds in rounds.jsonl; evaluation runs beside
# the next round and is shown apart) and its share of the round, the median
# share (target: under 5%), the start-up and registration time, and the
# coordinator's and the daemon's peak RSS. A round's wall time starts when
# it opens: time spent before that (start-up; a round waiting for the
# previous round's evaluation to finish) is printed apart.
#   bench/many_clients.sh [ROUNDS] [extra shefl run args...]
#   SHEFL_BUILD=build-foo bench/many_clients.sh   # another build directory
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(bench_build_dir "$ROOT")"
ROUNDS="${1:-3}"; shift || true
OUT="$(mktemp -d /tmp/shefl-many-XXXXXX)"
export OPENBLAS_NUM_THREADS=1
start=$(date +%s.%N)
"$BUILD/bin/shefl" run "$ROOT/configs/quick.yaml" --daemons 1 --out "$OUT/run" \
  --set name=many-clients --set rounds="$ROUNDS" \
  --set clients.num_clients=1000 --set clients.num_hpc=500 \
  --set clients.per_round_hpc=50 --set clients.per_round_lpc=50 \
  --set partition.alpha=0.6 "$@"
end=$(date +%s.%N)
python3 - "$OUT/run" "$start" "$end" <<'PY'
import json, sys, glob, statistics
run, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rows = [json.loads(l) for l in open(run + "/rounds.jsonl") if l.strip()]
s = json.load(open(run + "/summary.json"))
d = [json.loads(l) for f in glob.glob(run + "/daemons/*.jsonl") for l in open(f) if l.strip()]
shares = []
for r in rows:
    share = r["coordinator_seconds"] / r["wall_seconds"]
    shares.append(share)
    print(f'round {r["round"]}: wall {r["wall_seconds"]:.1f} s, coordinator {r["coordinator_seconds"]:.3f} s '
          f'({100*share:.2f}%), evaluation {r.get("eval_seconds", float("nan")):.2f} s (beside the next round), '
          f'{len(r["participants"])} clients, {r["updates_accepted"]} updates, acc {r["ensemble_accuracy"]:.4f}')
print(f'median coordinator share of round wall time: {100*statistics.median(shares):.2f}% over {len(rows)} rounds '
      f'(max {100*max(shares):.2f}%; target < 5%)')
total, in_rounds = end - start, sum(r["wall_seconds"] for r in rows)
print(f'whole run incl. start-up and registration of 1,000 clients: {total:.1f} s, '
      f'of which inside rounds {in_rounds:.1f} s; outside any round {total-in_rounds:.1f} s '
      f'(start-up, registration, a round waiting for the evaluation before the last, the last evaluation)')
print(f'coordinator peak RSS: {s["coordinator_peak_rss_bytes"]/2**20:.0f} MiB')
rss = [x["peak_rss_bytes"] for x in d if "peak_rss_bytes" in x]
print(f'daemon peak RSS: {max(rss)/2**20:.0f} MiB' if rss else 'daemon peak RSS: not logged')
PY
echo "results: $OUT/run"
