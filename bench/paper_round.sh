#!/usr/bin/env bash
# The SHEFL paper round, ours against a plain PyTorch-eager script of it
# (bench/paper_round.py), run alternately in one sitting on this machine,
# like for like: shefl in fp32 against the script in fp32, and, on a CPU
# with bf16 units (AVX512_BF16 or AMX), shefl with train.precision and
# eval.precision bf16 against the script with bf16 autocast
# (`paper_round.py --bf16`).
#   bench/paper_round.sh [SITTINGS] [ROUNDS] [extra shefl run args...]
# Defaults: 3 sittings of 3 rounds each. PAPER_ROUND_PRECISIONS picks the
# comparisons (default "fp32 bf16"; bf16 is left out, with a line saying
# so, where the CPU has no bf16 units). For each precision it prints each
# run's seconds per round, the medians and their ratio (ours / the
# channels-last script), our coordinator's own share of the round, and
# then the whole runs: samples trained per second of each process's wall
# time (start-up, data loading and the last evaluation included), ours
# against the strong script (channels-last) and, in fp32, the plain NCHW
# one, median over the sittings. Needs a build (scripts/test.sh or
# scripts/run.sh) and python3-torch (installed here if missing, from
# Debian).
#
# Our time is the critical path of the run's rounds: the sum of their
# wall_seconds (open to close, with any wait for the previous round's
# evaluation, which runs beside the next round) plus the last round's
# evaluation. Python's is its own wall time, training and evaluation
# included. The two draw their own partitions and cohorts, so a round's
# work differs between them: the ratio that counts divides each time by the
# samples trained on (shard sizes x epochs over every (client, model):
# train_samples in the daemons' lines and in the script's output). Both
# hold OpenBLAS to one thread; Python keeps torch's default threads.
# PAPER_ROUND_NCHW=0 skips the NCHW script (its line is then left out).
# Our daemon and coordinator raise glibc's malloc thresholds at start
# (common/core/malloc_tuning.h); PAPER_ROUND_SCRIPT_MALLOC=tuned gives the
# scripts the same thresholds (through GLIBC_TUNABLES), to see what that
# setting alone is worth to a plain PyTorch script.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SITTINGS="${1:-3}"; shift || true
ROUNDS="${1:-3}"; shift || true
export OPENBLAS_NUM_THREADS=1
[ -x "$ROOT/build/bin/shefl" ] || { echo "build first: scripts/test.sh or scripts/run.sh" >&2; exit 1; }
# Debian's python3-torch lives in the system interpreter (a python3 earlier
# on PATH, such as pyenv's, would not see it).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "paper_round: installing python3-torch (Debian)" >&2
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
OUT="$(mktemp -d /tmp/shefl-paper-round-XXXXXX)"
SCRIPT_ENV=()
case "${PAPER_ROUND_SCRIPT_MALLOC:-glibc}" in
  glibc) ;;
  # The thresholds of common/core/malloc_tuning.h (32 MiB, 256 MiB).
  tuned) SCRIPT_ENV=(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456)
         echo "paper_round: the scripts run with shefl's malloc thresholds (${SCRIPT_ENV[0]})" >&2 ;;
  *) echo "paper_round: PAPER_ROUND_SCRIPT_MALLOC must be glibc or tuned" >&2; exit 2 ;;
esac
PRECISIONS=""
for p in ${PAPER_ROUND_PRECISIONS:-fp32 bf16}; do
  if [ "$p" = bf16 ] && ! grep -qE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
    echo "paper_round: this CPU has no bf16 units (AVX512_BF16, AMX): bf16 left out" >&2
    continue
  fi
  PRECISIONS="$PRECISIONS $p"
done
for s in $(seq 1 "$SITTINGS"); do
  for p in $PRECISIONS; do
    echo "sitting $s/$SITTINGS, $p: shefl" >&2
    date +%s.%N > "$OUT/ours-$p-$s.start"
    "$ROOT/build/bin/shefl" run "$ROOT/configs/fmnist-paper.yaml" --out "$OUT/ours-$p-$s" \
      --set rounds="$ROUNDS" --set train.precision="$p" --set eval.precision="$p" "$@" \
      > "$OUT/ours-$p-$s.log" 2>&1 || { tail -20 "$OUT/ours-$p-$s.log" >&2; exit 1; }
    date +%s.%N > "$OUT/ours-$p-$s.end"
    flag=""; [ "$p" = bf16 ] && flag="--bf16"
    if [ "${PAPER_ROUND_NCHW:-1}" != 0 ] && [ "$p" = fp32 ]; then
      echo "sitting $s/$SITTINGS, $p: python (NCHW)" >&2
      env "${SCRIPT_ENV[@]}" "$PY" "$ROOT/bench/paper_round.py" --rounds "$ROUNDS" > "$OUT/python-$p-$s.jsonl"
    fi
    echo "sitting $s/$SITTINGS, $p: python (channels-last)" >&2
    env "${SCRIPT_ENV[@]}" "$PY" "$ROOT/bench/paper_round.py" --rounds "$ROUNDS" --channels-last $flag \
      > "$OUT/strong-$p-$s.jsonl"
  done
done
for p in $PRECISIONS; do
echo "== $p against $p"
python3 - "$OUT" "$SITTINGS" "$p" <<'PY'
import glob, json, os, statistics, sys
out, sittings, prec = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ours, py, ours_k, py_k, shares = [], [], [], [], []
for s in range(1, sittings + 1):
    rows = [json.loads(l) for l in open(f"{out}/ours-{prec}-{s}/rounds.jsonl") if l.strip()]
    seconds = sum(r["wall_seconds"] for r in rows) + rows[-1]["eval_seconds"]
    samples = sum(json.loads(l)["train_samples"]
                  for f in glob.glob(f"{out}/ours-{prec}-{s}/daemons/*.jsonl")
                  for l in open(f) if l.strip())
    share = sum(r["coordinator_seconds"] for r in rows) / sum(r["wall_seconds"] for r in rows)
    prow = [r for r in (json.loads(l) for l in open(f"{out}/strong-{prec}-{s}.jsonl") if l.strip())
            if "round" in r]
    p = sum(r["seconds"] for r in prow)
    p_samples = sum(r["train_samples"] for r in prow)
    ours.append(seconds / len(rows)); py.append(p / len(prow)); shares.append(share)
    ours_k.append(1000 * seconds / samples); py_k.append(1000 * p / p_samples)
    print(f"sitting {s}: shefl {ours[-1]:.1f} s/round, {ours_k[-1]:.3f} s per 1000 samples trained "
          f"(acc {rows[-1]['ensemble_accuracy']:.3f}, coordinator {100*share:.1f}%); "
          f"channels-last script {py[-1]:.1f} s/round, {py_k[-1]:.3f} s per 1000 samples (acc {prow[-1]['accuracy']:.3f})")
mo, mp = statistics.median(ours), statistics.median(py)
ko, kp = statistics.median(ours_k), statistics.median(py_k)
print(f"median seconds per round: shefl {mo:.1f}, channels-last script {mp:.1f} (ratio {mo/mp:.2f}; the two sample "
      f"different clients, so rounds differ in work)")
print(f"median seconds per 1000 samples trained: shefl {ko:.3f}, script {kp:.3f}; "
      f"ratio shefl/script {ko/kp:.2f} (first target <= 0.70)")
print(f"coordinator's own share of the round: {100*statistics.median(shares):.1f}% (target < 5%)")

def whole(kind, s):
    last = [json.loads(l) for l in open(f"{out}/{kind}-{prec}-{s}.jsonl") if l.strip()][-1]
    return last["train_samples"] / last["process_seconds"]
rates = {"shefl": [], "strong": [], "python": []}
for s in range(1, sittings + 1):
    wall = float(open(f"{out}/ours-{prec}-{s}.end").read()) - float(open(f"{out}/ours-{prec}-{s}.start").read())
    samples = sum(json.loads(l)["train_samples"]
                  for f in glob.glob(f"{out}/ours-{prec}-{s}/daemons/*.jsonl")
                  for l in open(f) if l.strip())
    rates["shefl"].append(samples / wall)
    rates["strong"].append(whole("strong", s))
    if os.path.exists(f"{out}/python-{prec}-{s}.jsonl"):
        rates["python"].append(whole("python", s))
    nchw = f", NCHW script {rates['python'][-1]:.0f}" if len(rates["python"]) == s else ""
    print(f"sitting {s}, whole runs: shefl {rates['shefl'][-1]:.0f} samples/s, channels-last script "
          f"{rates['strong'][-1]:.0f}{nchw}")
m = {k: statistics.median(v) for k, v in rates.items() if v}
print(f"median samples trained per second of wall time: shefl {m['shefl']:.0f}, "
      f"channels-last script {m['strong']:.0f} (shefl {m['shefl']/m['strong']:.2f}x, {prec} against {prec}; "
      f"target >= {2.5 if prec == 'bf16' else 2.0}x)")
if "python" in m:
    print(f"NCHW script {m['python']:.0f} (shefl {m['shefl']/m['python']:.2f}x)")
PY
done
echo "runs: $OUT"
