#!/usr/bin/env python3
"""Sums a profiled round's folded stacks by what the code was doing.

bench/round_profile.sh calls it:
  round_profile_summary.py FOLDED HZ START END CORES RUN_DIR
FOLDED is perf's folded stacks (`frame;frame;... COUNT`, the process name
first); START and END the run's wall-clock times in seconds. Each stack goes to the first category whose pattern matches it,
in the order below, so a sample inside the optimiser is not also counted
as training. The cores' idle time is what the samples do not cover:
CORES x (END - START) less the samples / HZ.
"""
import json
import os
import re
import sys

# (category, process prefix, pattern over the whole stack); the first
# match wins. The coordinator's oneDNN kernels are its evaluation's. The
# process prefix is perf's name for it: the kernel keeps 15 characters.
ONEDNN = r";_?jit_[^;]*$|;brg[^;]*$"
CATEGORIES = [
    ("evaluation (coordinator)", "shefl-coordinat",
     ONEDNN + r"|EvalThreads|Evaluator|EvaluateEnsemble"),
    ("aggregation (coordinator)", "shefl-coordinat", r"Aggregat|IterativeRound"),
    ("oneDNN kernels, training (conv, matmul)", "", ONEDNN),
    ("optimiser (LeanSgd, DropGrads)", "", r"LeanSgd::|DropGrads"),
    ("backward, not oneDNN", "", r"autograd::Engine|Tensor::backward"),
    ("forward and loss, not oneDNN", "", r"::forward|cross_entropy"),
    ("top-k", "", r"TopK|RadixTopK|DeltaCompressor|radix_internal"),
    ("encoding", "", r"EncodeSparseDelta|GolombRice|EliasFano|codec"),
    ("training, the rest (batches, casts, packaging)", "",
     r"LocalTrain|TaskTrainer"),
    ("allocator (malloc, free)", "",
     r"(malloc|free|memalign|tcache_[a-z]+|unlink_chunk|consolidate)[^;]*$"),
    ("start-up (loading libraries, data, models)", "",
     r"_dl_|do_lookup_x|call_init|LoadDataset|ReadIdx|Create|MakeModel"),
    ("network (gRPC, TLS)", "", r"grpc|ssl|SSL|tls_|EVP_"),
    ("coordinator, the rest", "shefl-coordinat", r""),
]


def main(argv):
    folded, hz, run = argv[1], float(argv[2]), argv[6]
    wall, cores = float(argv[4]) - float(argv[3]), int(argv[5])
    totals = {name: 0 for name, _, _ in CATEGORIES}
    totals["other"] = 0
    processes = {}
    samples = 0
    for line in open(folded):
        line = line.rstrip("\n")
        if not line:
            continue
        stack, count = line.rsplit(" ", 1)
        n = int(count)
        samples += n
        proc = stack.split(";", 1)[0]
        processes[proc] = processes.get(proc, 0) + n
        for name, prefix, pattern in CATEGORIES:
            if proc.startswith(prefix) and re.search(pattern, stack):
                totals[name] += n
                break
        else:
            totals["other"] += n
    busy = samples / hz
    capacity = cores * wall
    idle = max(0.0, capacity - busy)
    print(f"{samples} samples at {hz:.0f} Hz: {busy:.1f} s busy of {capacity:.1f} s "
          f"({cores} cores x {wall:.1f} s wall)")
    print(f"{'where':<48} {'seconds':>8} {'share':>7}")
    rows = sorted(totals.items(), key=lambda kv: -kv[1]) + [("idle (no samples)", idle * hz)]
    for name, n in rows:
        print(f"{name:<48} {n / hz:8.1f} {100 * (n / hz) / capacity:6.1f}%")
    print("by process: " + ", ".join(f"{p} {100 * n / samples:.1f}%" for p, n in
                                     sorted(processes.items(), key=lambda kv: -kv[1])[:4]))
    rounds = os.path.join(run, "rounds.jsonl")
    if os.path.exists(rounds):
        r = [json.loads(l) for l in open(rounds) if l.strip()][-1]
        print(f"the round: {r['wall_seconds']:.1f} s open to close, evaluation "
              f"{r['eval_seconds']:.1f} s, accuracy {r['ensemble_accuracy']:.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 7 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    main(sys.argv)
