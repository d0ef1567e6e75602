#!/usr/bin/env bash
# A Python client's rounds against the C++ daemon's on the same clients and
# config: every client on one C++ daemon, then every client on one Python
# client (python/examples/fmnist_client.py: its own CNN and loop), each
# with T threads, the runs alternated S times.
#   bench/python_client.sh [ROUNDS] [SITTINGS] [THREADS] [extra shefl run args...]
# Prints per run: seconds per round (the daemon's, median), training
# samples per second, where the Python client's time went (download, load,
# train, compress: delta + top-k + encode + residual, upload), and whether
# the bytes each client sent and received are identical on both sides.
# Defaults: 3 rounds of configs/quick.yaml, 2 sittings, 1 thread.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS="${1:-3}"; SITTINGS="${2:-2}"; THREADS="${3:-1}"; shift $(( $# < 3 ? $# : 3 )) || true
OUT="$(mktemp -d /tmp/shefl-python-bench-XXXXXX)"
export OPENBLAS_NUM_THREADS=1
export PYTHONPATH="$ROOT/python:$ROOT/build/python${PYTHONPATH:+:$PYTHONPATH}"
[ -x "$ROOT/build/bin/shefl" ] || { echo "build first: scripts/test.sh or scripts/run.sh" >&2; exit 1; }
CLIENTS="$("$ROOT/build/bin/shefl" config "$ROOT/configs/quick.yaml" "$@" \
  | awk '/^clients:/{c=1} c && /num_clients:/{print $2; exit}')"
for s in $(seq 1 "$SITTINGS"); do
  echo "sitting $s/$SITTINGS: C++ daemon" >&2
  "$ROOT/build/bin/shefl" run "$ROOT/configs/quick.yaml" --out "$OUT/cpp-$s" --threads "$THREADS" \
    --set rounds="$ROUNDS" "$@" > "$OUT/cpp-$s.log" 2>&1
  echo "sitting $s/$SITTINGS: Python client" >&2
  "$ROOT/build/bin/shefl" run "$ROOT/configs/quick.yaml" --out "$OUT/python-$s" --threads "$THREADS" \
    --set rounds="$ROUNDS" --python-clients "0-$((CLIENTS - 1))" "$@" > "$OUT/python-$s.log" 2>&1
done
/usr/bin/python3 - "$OUT" "$SITTINGS" <<'PY'
import glob, json, os, statistics, sys
out, sittings = sys.argv[1], int(sys.argv[2])

def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]

def daemon_rounds(run):
    rows = []
    for p in glob.glob(os.path.join(run, "daemons", "*.jsonl")):
        rows += lines(p)
    return sorted(rows, key=lambda r: r["round"])

def per_client(run):
    return {(r["round"], c): (v["payload_up"], v["payload_down"], v["control_up"], v["control_down"])
            for r in lines(os.path.join(run, "rounds.jsonl")) for c, v in r["bytes_by_client"].items()}

summary = {}
for kind in ("cpp", "python"):
    walls, rates, phases = [], [], {}
    for s in range(1, sittings + 1):
        run = os.path.join(out, "%s-%d" % (kind, s))
        rounds = lines(os.path.join(run, "rounds.jsonl"))
        walls += [r["wall_seconds"] for r in rounds]
        for d in daemon_rounds(run):
            if d["train_seconds"] > 0:
                rates.append(d["train_samples"] / d["train_seconds"])
            for k, v in d.get("phase_seconds", {}).items():
                phases.setdefault(k, []).append(v)
    summary[kind] = statistics.median(walls), statistics.median(rates)
    line = "%-7s median round %.1f s, training %.0f samples/s" % ((kind,) + summary[kind])
    if phases:
        total = sum(statistics.median(v) for v in phases.values())
        line += "; per round: " + ", ".join(
            "%s %.2f s (%.0f%%)" % (k, statistics.median(v), 100 * statistics.median(v) / total)
            for k, v in sorted(phases.items()))
    print(line)
print("python/C++: round time %.2fx, training speed %.2fx" % (
    summary["python"][0] / summary["cpp"][0], summary["python"][1] / summary["cpp"][1]))
same = all(per_client(os.path.join(out, "cpp-%d" % s)) == per_client(os.path.join(out, "python-%d" % s))
           for s in range(1, sittings + 1))
print("bytes per client and round identical on both sides:", "yes" if same else "NO")
PY
echo "results: $OUT"
