#!/usr/bin/env python3
"""A researcher's own training loop on Fashion-MNIST, joining a shefl run
beside the C++ daemons.

    shefl run configs/quick.yaml --python-clients 0-1
or by hand, against a coordinator already running:
    python3 python/examples/fmnist_client.py --coordinator 127.0.0.1:50051 \
        --clients 0-1 --insecure --out runs/quick/daemons

The network must have the coordinator's flat layout for `model.name` (here
shefl_client.models' `cnn`: conv 5x5 32, conv 5x5 64, fc 512, fc 10; or
its `mlp`): the client refuses to start otherwise, naming the first tensor
that differs.
The loop is the user's: plain PyTorch over the client's shard, which the
library computes from the run's seed as every C++ daemon does."""
from __future__ import annotations

import os
import sys
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

try:
    import shefl_client  # noqa: F401  (installed with pip install ./python)
except ImportError:  # run from a checkout: the package is beside this folder
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from shefl_client import Client, ClientError, TrainContext, cli  # noqa: E402
# The C++ cnn and mlp in PyTorch (bench/gpu_train_eager.py trains the same
# Cnn); your own torch.nn.Module goes here, with the same flat layout.
from shefl_client.models import Cnn, Mlp  # noqa: E402


def make_model(config: dict[str, Any]) -> nn.Module:
    name = config["model"]["name"]
    if name == "cnn":
        # Channels-last, as the C++ daemon's cnn: oneDNN's convolutions then
        # skip reordering at every call (faster on CPU, and the same sums).
        return Cnn().to(memory_format=torch.channels_last)
    if name == "mlp":
        return Mlp()
    raise SystemExit("this example has a cnn and an mlp, not '%s'" % name)


def train(model: nn.Module, ctx: TrainContext) -> float:
    """One task: the coordinator's lr, epochs or steps, and batch size, on
    this client's shard (ctx.indices into ctx.dataset)."""
    assert ctx.dataset is not None  # the run's data set: no num_samples given to Client
    x_all, y_all = torch.from_numpy(ctx.dataset.x), torch.from_numpy(ctx.dataset.y)
    train_cfg = ctx.config["train"]  # the run's settings, as the C++ daemon's SGD takes them
    opt = torch.optim.SGD(model.parameters(), lr=ctx.lr,
                          momentum=float(train_cfg.get("momentum", 0.0)),
                          weight_decay=float(train_cfg.get("weight_decay", 0.001)))
    model.train()
    total, seen = 0.0, 0
    for _, ids in ctx.batches():  # the C++ daemon's batch order
        idx = torch.tensor(ids)
        x, y = x_all[idx].to(ctx.device), y_all[idx].to(ctx.device)
        if x.dim() == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        opt.zero_grad()
        with ctx.autocast():  # bf16 when the run asks for it (train.precision)
            loss = F.cross_entropy(model(x), y).float()
        loss.backward()
        opt.step()
        total += loss.item() * len(ids)
        seen += len(ids)
    return total / max(1, seen)


def main(argv: list[str]) -> int:
    options = cli.parse(argv, description=(__doc__ or "").splitlines()[0])
    try:
        Client(options, model=make_model, train=train).run()
    except ClientError as e:
        sys.stderr.write("fmnist_client: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
