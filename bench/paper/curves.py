#!/usr/bin/env python3
"""Accuracy per round of reproduction runs, as Markdown, for docs/RESULTS.md.

  bench/paper/curves.py RUN_DIR... [--threshold 0.8]

One row per run folder (its rounds.jsonl): the ensemble accuracy (%) of
every evaluated round, the first round at or above the threshold (the
paper's "rounds to 80%" for Fashion-MNIST), the best accuracy, and the
mean wall seconds a round. Runs still going are read as far as they got.
Only the standard library: runs on a fresh Debian 12 python3.
"""
import json
import os
import sys


def read_rounds(run_dir):
    path = os.path.join(run_dir, "rounds.jsonl")
    rows = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                j = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"curves.py: {path}:{n}: not JSON ({e})")
            rows[j["round"]] = j  # a resumed run may repeat a round: last wins
    return [rows[r] for r in sorted(rows)]


def main(argv):
    threshold = 0.8
    dirs = []
    it = iter(argv)
    for a in it:
        if a in ("-h", "--help"):
            print(__doc__.strip())
            return
        if a == "--threshold":
            threshold = float(next(it, "nan"))
        elif a.startswith("--threshold="):
            threshold = float(a.split("=", 1)[1])
        else:
            dirs.append(a)
    if not dirs:
        sys.exit(__doc__)
    runs = []
    for d in dirs:
        if not os.path.isfile(os.path.join(d, "rounds.jsonl")):
            print(f"curves.py: {d}: no rounds.jsonl, skipped", file=sys.stderr)
            continue
        runs.append((os.path.basename(os.path.normpath(d)), read_rounds(d)))
    if not runs:
        sys.exit("curves.py: no run with a rounds.jsonl")
    width = max(len(r) for _, r in runs)
    head = "| run | " + " | ".join(f"r{i}" for i in range(1, width + 1))
    print(head + f" | rounds to {threshold:.0%} | best | s/round |")
    print("| --- " * (width + 4) + "|")
    for name, rounds in runs:
        acc = {r["round"]: r.get("ensemble_accuracy") for r in rounds
               if r.get("evaluated", True)}
        cells = []
        for i in range(1, width + 1):
            a = acc.get(i)
            cells.append("" if a is None else f"{100 * a:.1f}")
        reached = next((i for i in sorted(acc)
                        if acc[i] is not None and acc[i] >= threshold), None)
        vals = [a for a in acc.values() if a is not None]
        best = f"{100 * max(vals):.2f}" if vals else ""
        secs = [r["wall_seconds"] for r in rounds if "wall_seconds" in r]
        secs.sort()
        mean_s = f"{secs[len(secs) // 2]:.1f}" if secs else ""
        print(f"| {name} | " + " | ".join(cells) +
              f" | {reached if reached else 'not yet'} | {best} | {mean_s} |")


if __name__ == "__main__":
    main(sys.argv[1:])
