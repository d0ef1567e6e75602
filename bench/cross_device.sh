#!/usr/bin/env bash
# Cross-device scale (configs/cross-device.yaml): 100,000 logical clients
# on DAEMONS daemons on this machine, 1,000 a round, the mlp on a
# synthetic set, aggregation.reduction fixed_point. Four runs:
#   A  the config as it is (N = 100,000);
#   B  N = 10,000, the same cohort: A - B is what 90,000 more clients cost;
#   C  B with reduction client_order (the updates buffered until close);
#   D  B on 3 daemons: the models must equal B's bit for bit.
# Prints registration time and memory a client (targets: < 30 s, < 1 KB),
# per round the wall time and the coordinator's own time and share
# (target: < 5%), peak RSS of A, B and C, and whether D's models equal B's.
# Sampling costs are bench/sampling_bench's, the reduction's
# bench/aggregate_bench's.
#   bench/cross_device.sh [ROUNDS] [DAEMONS] [extra shefl run args...]
#   SHEFL_BUILD=build-foo bench/cross_device.sh   # another build directory
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(bench_build_dir "$ROOT")"
ROUNDS="${1:-3}"; shift || true
DAEMONS="${1:-10}"; shift || true
OUT="$(mktemp -d /tmp/shefl-xdev-XXXXXX)"
export OPENBLAS_NUM_THREADS=1
run() {  # NAME DAEMONS [--set ...]
  local name="$1" daemons="$2"; shift 2
  echo "== run $name: $daemons daemons $*" >&2
  "$BUILD/bin/shefl" run "$ROOT/configs/cross-device.yaml" --daemons "$daemons" \
    --out "$OUT/$name" --set rounds="$ROUNDS" "$@" > "$OUT/$name.log" 2>&1 \
    || { tail -20 "$OUT/$name.log" >&2; exit 1; }
}
small=(--set clients.num_clients=10000 --set clients.num_hpc=1000)
run A "$DAEMONS" "$@"
run B "$DAEMONS" "${small[@]}" "$@"
run C "$DAEMONS" "${small[@]}" --set aggregation.reduction=client_order "$@"
run D 3 "${small[@]}" "$@"
python3 - "$OUT" <<'PY'
import json, sys, statistics
out = sys.argv[1]
def load(name):
    rows = [json.loads(l) for l in open(f"{out}/{name}/rounds.jsonl") if l.strip()]
    return rows, json.load(open(f"{out}/{name}/summary.json"))
(ra, sa), (rb, sb), (rc, sc), (rd, sd) = (load(n) for n in "ABCD")
reg = sa["registration"]
print(f'A: {reg["clients"]:,} clients registered and connected in {reg["seconds"]:.1f} s '
      f'(target < 30 s); registry growth {reg["bytes_per_client"]:.0f} B a client')
grow = (sa["coordinator_peak_rss_bytes"] - sb["coordinator_peak_rss_bytes"]) / 90000
print(f'coordinator peak RSS: A {sa["coordinator_peak_rss_bytes"]/2**20:.0f} MiB, '
      f'B {sb["coordinator_peak_rss_bytes"]/2**20:.0f} MiB: {grow:.0f} B a client more '
      f'(target < 1,024)')
shares = []
for r in ra:
    share = r["coordinator_seconds"] / r["wall_seconds"]
    shares.append(share)
    print(f'A round {r["round"]}: wall {r["wall_seconds"]:.2f} s, coordinator '
          f'{r["coordinator_seconds"]:.3f} s ({100*share:.2f}%), '
          f'{len(r["participants"])} clients, {r["updates_accepted"]} updates, '
          f'acc {r.get("ensemble_accuracy", float("nan")):.4f}')
print(f'A median coordinator share {100*statistics.median(shares):.2f}% '
      f'(max {100*max(shares):.2f}%; target < 5%)')
print(f'reduction at N = 10,000, 1,400 updates a round: peak RSS fixed_point (B) '
      f'{sb["coordinator_peak_rss_bytes"]/2**20:.0f} MiB, client_order (C) '
      f'{sc["coordinator_peak_rss_bytes"]/2**20:.0f} MiB')
same = sb["model_sha256"] == sd["model_sha256"]
print(f'models of B (all daemons) and D '
      f'(3 daemons): {"bit-identical" if same else "DIFFER"}')
differ = sum(x != y for x, y in zip(sb["model_sha256"], sc["model_sha256"]))
print(f'fixed_point (B) against client_order (C): {differ} of {len(sb["model_sha256"])} '
      f'models differ in some bit (the double sum rounds per term; see docs/PERFORMANCE.md)')
print(f'accuracy after {len(ra)} rounds: A {sa["final_accuracy"]:.4f}, B {sb["final_accuracy"]:.4f}, '
      f'C {sc["final_accuracy"]:.4f}')
sys.exit(0 if same else 1)
PY
echo "results: $OUT"
