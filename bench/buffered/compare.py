#!/usr/bin/env python3
"""usage: bench/buffered/compare.py DIR

Reads bench/buffered/run.sh's runs (DIR/synchronous-sN, DIR/buffered-sN)
and prints, per seed and mode: wall seconds to the config's eval.threshold
and to the synchronous run's final accuracy, the final accuracy, the client
updates applied, and the buffered run's accuracy at the evaluation whose
updates come nearest the synchronous run's total; then the medians' ratio.

Times are from the first round's opening (synchronous: the sum of its
rounds' wall_seconds) or the buffered loop's start (elapsed_seconds), so
registration counts in neither."""
import glob
import json
import os
import statistics
import sys


def curve(run):
    """(seconds, updates, accuracy) at each evaluated line."""
    out, t, n = [], 0.0, 0
    with open(os.path.join(run, "rounds.jsonl")) as f:
        for text in f:
            line = json.loads(text)
            if line.get("mode") == "buffered":
                t = line["elapsed_seconds"]
                n += line["updates"]
            else:
                t += line["wall_seconds"]
                n += line["updates_accepted"]
            if line.get("evaluated"):
                out.append((t, n, line["ensemble_accuracy"]))
    return out


def first_time(points, target):
    for t, _, a in points:
        if a >= target:
            return t
    return None


def at_updates(points, n):
    best = min(points, key=lambda p: abs(p[1] - n))
    return best[2], best[1]


def fmt(x, spec="%.1f"):
    return "-" if x is None else spec % x


def main(root):
    threshold = 0.8
    rows, ratio80, ratiofinal = [], [], []
    for sync in sorted(glob.glob(os.path.join(root, "synchronous-s*"))):
        seed = sync.rsplit("-s", 1)[1]
        buf = os.path.join(root, "buffered-s" + seed)
        if not os.path.exists(os.path.join(buf, "rounds.jsonl")):
            continue
        with open(os.path.join(sync, "config.yaml")) as f:
            for text in f:
                if text.strip().startswith("threshold:"):
                    threshold = float(text.split(":")[1])
        s, b = curve(sync), curve(buf)
        final = s[-1][2]
        s80, b80 = first_time(s, threshold), first_time(b, threshold)
        sfin, bfin = first_time(s, final), first_time(b, final)
        acc, n = at_updates(b, s[-1][1])
        rows.append((seed, s, b, s80, b80, sfin, bfin, acc, n))
        if s80 and b80:
            ratio80.append(s80 / b80)
        if sfin and bfin:
            ratiofinal.append(sfin / bfin)
    print("| seed | mode | s to %.0f%% | s to sync final | final acc | updates | acc at sync's updates |" % (100 * threshold))
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for seed, s, b, s80, b80, sfin, bfin, acc, n in rows:
        print("| %s | synchronous | %s | %s | %.2f | %d | %.2f |" % (seed, fmt(s80), fmt(sfin), 100 * s[-1][2], s[-1][1], 100 * s[-1][2]))
        print("| %s | buffered | %s | %s | %.2f | %d | %.2f (at %d) |" % (seed, fmt(b80), fmt(bfin), 100 * b[-1][2], b[-1][1], 100 * acc, n))
    if ratio80:
        print("\nspeed-up to %.0f%%: median %.2fx (%s)" % (100 * threshold, statistics.median(ratio80), ", ".join("%.2f" % r for r in ratio80)))
    if ratiofinal:
        print("speed-up to the synchronous final accuracy: median %.2fx (%s)" % (statistics.median(ratiofinal), ", ".join("%.2f" % r for r in ratiofinal)))


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    main(sys.argv[1])
