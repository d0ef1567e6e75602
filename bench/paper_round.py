#!/usr/bin/env python3
"""The SHEFL paper round (configs/fmnist-paper.yaml) as a plain one-process
PyTorch-eager script: the yardstick bench/paper_round.sh compares shefl with.

What a researcher would write first: one process, torch's default threads,
every (client, model) trained one after another, top-k of each delta,
workload-aware aggregation, the ensemble evaluated on the 10,000 test
images every round. Same data, model (McMahan's CNN), optimiser and sizes
as the config; its own partition and sampling draws (this measures time,
not accuracy).

  bench/paper_round.py [--rounds R] [--seed S] [--channels-last] [--bf16]
Prints one JSON line per round: {"round", "seconds", "accuracy",
"train_samples"} (samples trained on: shard sizes times epochs, summed over
every (client, model) of the round), and a last line {"process_seconds",
"train_samples", "layout"}: the whole process's wall time from start, data
loading and imports included, for comparing whole runs.

--channels-last is what a strong PyTorch user writes on CPU: the CNN's
weights and inputs in channels-last memory format, so oneDNN's
convolutions skip a reorder at every call (about 1.7x faster here than
the default NCHW). paper_round.sh compares against both.

--bf16 is what that user adds on a CPU with bf16 units (AVX512_BF16 or
AMX): torch.autocast("cpu", dtype=torch.bfloat16) around the forward pass
and the loss, in training and in evaluation; the weights, gradients and
optimiser stay fp32, as in shefl's train.precision=bf16. On a CPU without
bf16 units it refuses to run (autocast would emulate bf16 and measure
nothing a user would choose). The last line then says "precision": "bf16".
"""
import sys

if __name__ == "__main__" and any(a in ("-h", "--help") for a in sys.argv[1:]):
    print(__doc__.strip())  # before importing torch, which may be missing
    sys.exit(0)

import time

START = time.time()  # the whole process, imports included

import argparse
import gzip
import json
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = "/usr/share/datasets/fashion-mnist"
N, NUM_HPC, C_H, C_L, M = 100, 50, 5, 5, 5
LR, WD, BATCH, EPOCHS, RHO, R = 0.01, 1e-3, 16, 10, 0.1, 5
ALPHA = 0.6


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(split):
    x = idx(f"{ROOT}/{split}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    y = idx(f"{ROOT}/{split}-labels-idx1-ubyte.gz").astype(np.int64)
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y)


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.fc1 = nn.Linear(1024, 512)
        self.fc2 = nn.Linear(512, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def dirichlet_split(labels, rng):
    shards = [[] for _ in range(N)]
    for c in range(10):
        ids = np.flatnonzero(labels == c)
        rng.shuffle(ids)
        p = rng.dirichlet([ALPHA] * N)
        cuts = (np.cumsum(p) * len(ids)).astype(int)[:-1]
        for i, part in enumerate(np.split(ids, cuts)):
            shards[i].extend(part.tolist())
    return [np.array(s) for s in shards]


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def load_flat(model, w):
    off = 0
    for p in model.parameters():
        n = p.numel()
        p.data.copy_(w[off:off + n].view_as(p))
        off += n


def cpu_has_bf16():
    """AVX512_BF16 or AMX, from the kernel's flags (Linux)."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def autocast(bf16):
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)


def train(net, global_w, x, y, shard, rng, fmt, bf16=False):
    load_flat(net, global_w)
    opt = torch.optim.SGD(net.parameters(), lr=LR, weight_decay=WD)
    for _ in range(EPOCHS):
        order = shard[rng.permutation(len(shard))]
        for b in range(0, len(order), BATCH):
            ids = torch.from_numpy(order[b:b + BATCH])
            opt.zero_grad()
            with autocast(bf16):
                loss = F.cross_entropy(net(x[ids].contiguous(memory_format=fmt)), y[ids])
            loss.backward()
            opt.step()
    return flat(net) - global_w


def topk(delta, k):
    _, ids = torch.topk(delta.abs(), k, sorted=False)
    out = torch.zeros_like(delta)
    out[ids] = delta[ids]
    return out


def evaluate(nets, models, tx, ty, fmt, bf16=False):
    probs = torch.zeros(len(ty), 10)
    with torch.no_grad(), autocast(bf16):
        for net, w in zip(nets, models):
            load_flat(net, w)
            for b in range(0, len(ty), 1000):
                batch = tx[b:b + 1000].contiguous(memory_format=fmt)
                probs[b:b + 1000] += F.softmax(net(batch).float(), dim=1)
    return (probs.argmax(1) == ty).float().mean().item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--channels-last", action="store_true",
                    help="weights and inputs channels-last (the strong CPU script)")
    ap.add_argument("--bf16", action="store_true",
                    help="bf16 autocast of the forward pass and the loss (CPUs with "
                         "AVX512_BF16 or AMX)")
    args = ap.parse_args()
    if args.bf16 and not cpu_has_bf16():
        sys.exit("paper_round.py: --bf16 needs a CPU with AVX512_BF16 or AMX "
                 "(/proc/cpuinfo lists neither avx512_bf16 nor amx_bf16)")
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    x, y = load("train")
    tx, ty = load("t10k")
    shards = dirichlet_split(y.numpy(), rng)
    nets = [Cnn().to(memory_format=fmt) for _ in range(M)]
    models = [flat(n) for n in nets]
    d = models[0].numel()
    k = math.ceil(RHO * d)  # r = M: HPC members and LPCs alike
    hpc_clusters = np.array_split(rng.permutation(NUM_HPC), C_H)
    lpc_clusters = np.array_split(NUM_HPC + rng.permutation(N - NUM_HPC), C_L)
    total_samples = 0
    for t in range(args.rounds):
        start = time.time()
        if t % M == 0:  # latin: cyclic shifts of one permutation
            base = rng.permutation(M)
            perm = [np.roll(base, c) for c in range(C_L)]
        hpcs = [rng.choice(c) for c in hpc_clusters]
        lpcs = [rng.choice(c) for c in lpc_clusters]
        sums = {(m, g): [torch.zeros(d), 0] for m in range(M) for g in "HL"}
        samples = EPOCHS * (M * sum(len(shards[h]) for h in hpcs) +
                            sum(len(shards[l]) for l in lpcs))
        for h in hpcs:
            for m in range(M):
                delta = topk(train(nets[m], models[m], x, y, shards[h], rng, fmt,
                                   args.bf16), k)
                sums[(m, "H")][0] += delta
                sums[(m, "H")][1] += 1
        for c, l in enumerate(lpcs):
            m = perm[c][t % M]
            delta = topk(train(nets[m], models[m], x, y, shards[l], rng, fmt, args.bf16), k)
            sums[(m, "L")][0] += delta
            sums[(m, "L")][1] += 1
        for m in range(M):
            (sh, nh), (sl, nl) = sums[(m, "H")], sums[(m, "L")]
            beta = 0.5 if nh and nl else (1.0 if nh else 0.0)
            dh = sh / nh if nh else 0
            dl = sl / nl if nl else 0
            models[m] = models[m] + beta * dh + (1 - beta) * dl
        acc = evaluate(nets, models, tx, ty, fmt, args.bf16)
        total_samples += samples
        print(json.dumps({"round": t + 1, "seconds": time.time() - start,
                          "accuracy": acc, "train_samples": samples}),
              flush=True)
    print(json.dumps({"process_seconds": time.time() - START, "train_samples": total_samples,
                      "layout": "channels_last" if args.channels_last else "nchw",
                      "precision": "bf16" if args.bf16 else "fp32"}), flush=True)


if __name__ == "__main__":
    main()
