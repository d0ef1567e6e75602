#!/usr/bin/env bash
# Where a paper round's CPU time goes, from Linux perf: one round of
# configs/fmnist-paper.yaml (`shefl run`, one daemon on this machine)
# sampled with call graphs, folded into stacks, drawn as a flame graph
# (scripts/flamegraph.py) and summed by what the code is doing: oneDNN's
# kernels (convolutions and matrix products; their code is generated at run
# time, so perf sees no callers: bench/step_profile_bench splits them by
# layer and pass), the rest of the forward pass, backward, the optimiser,
# top-k, encoding, the allocator, the coordinator's evaluation, start-up,
# and the cores' idle time (cores x wall time less the samples).
#   bench/round_profile.sh [PRECISION] [extra shefl run args...]
# PRECISION: fp32 or bf16 (default bf16 where the CPU has bf16 units,
# else fp32). Writes perf.data, folded.txt, flame.svg and the run under a
# new /tmp/shefl-round-profile-* folder, said at the end. Needs a build and
# perf (Debian's linux-perf, installed here if missing) with
# kernel.perf_event_paranoid <= 2. PROFILE_HZ sets the sampling rate
# (default 199 a second).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREC="${1:-}"; shift || true
if [ -z "$PREC" ]; then
  PREC=fp32; grep -qE 'avx512_bf16|amx_bf16' /proc/cpuinfo && PREC=bf16
fi
[ -x "$ROOT/build/bin/shefl" ] || { echo "build first: scripts/test.sh or scripts/run.sh" >&2; exit 1; }
if ! command -v perf >/dev/null; then
  echo "round_profile: installing linux-perf (Debian)" >&2
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends linux-perf >/dev/null
fi
paranoid="$(cat /proc/sys/kernel/perf_event_paranoid)"
if [ "$paranoid" -gt 2 ] && [ "$(id -u)" -ne 0 ]; then
  echo "round_profile: kernel.perf_event_paranoid is $paranoid; perf needs <= 2" \
       "(sudo sysctl kernel.perf_event_paranoid=2)" >&2
  exit 1
fi
COLLAPSE=/usr/lib/perf-core/scripts/python/stackcollapse.py
[ -f "$COLLAPSE" ] || COLLAPSE="$(find /usr/lib /usr/libexec -name stackcollapse.py -path '*perf*' 2>/dev/null | head -1)"
[ -n "$COLLAPSE" ] || { echo "round_profile: perf's stackcollapse.py not found" >&2; exit 1; }

OUT="$(mktemp -d /tmp/shefl-round-profile-XXXXXX)"
HZ="${PROFILE_HZ:-199}"
export OPENBLAS_NUM_THREADS=1
# oneDNN writes /tmp/perf-PID.map for the kernels it generates, so perf
# can name them.
export ONEDNN_JIT_PROFILE=2 DNNL_JIT_PROFILE=2
before="$(ls /tmp/perf-*.map 2>/dev/null || true)"
echo "round_profile: one $PREC round under perf at $HZ Hz ..." >&2
start=$(date +%s.%N)
perf record -q -F "$HZ" --call-graph dwarf,16384 -o "$OUT/perf.data" -- \
  "$ROOT/build/bin/shefl" run "$ROOT/configs/fmnist-paper.yaml" --out "$OUT/run" \
  --set rounds=1 --set train.precision="$PREC" --set eval.precision="$PREC" "$@" \
  > "$OUT/run.log" 2>&1 || { tail -20 "$OUT/run.log" >&2; exit 1; }
end=$(date +%s.%N)
echo "round_profile: folding the stacks (a minute or two) ..." >&2
perf script -i "$OUT/perf.data" -s "$COLLAPSE" 2>/dev/null > "$OUT/folded.txt"
for m in $(ls /tmp/perf-*.map 2>/dev/null); do
  case "$before" in *"$m"*) ;; *) rm -f "$m" ;; esac
done
python3 "$ROOT/scripts/flamegraph.py" "$OUT/folded.txt" --out "$OUT/flame.svg" \
  --title "shefl: one fmnist-paper round ($PREC)" 2>/dev/null
python3 "$ROOT/bench/round_profile_summary.py" "$OUT/folded.txt" "$HZ" \
  "$start" "$end" "$(nproc)" "$OUT/run"
echo "flame graph: $OUT/flame.svg; folded stacks: $OUT/folded.txt"
