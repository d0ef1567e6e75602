#!/usr/bin/env python3
"""PyTorch-eager training speed of shefl's `cnn` and `resnet18`, to set
beside shefl's own (docs/PERFORMANCE.md, "13a. Figures").

  python3 bench/gpu_train_eager.py [--device cuda] [--steps 200]
                                   [--sittings 5] [--models cnn,resnet18]

The same architectures as common/learn/models.cc and common/learn/model_resnet.cc
(cnn on 28x28x1: shefl_client.models.Cnn, the Python client's; resnet18
with the CIFAR stem on 32x32x3), batch 16, SGD
lr 0.01, weight decay 1e-3, no momentum (the paper configs), batches
drawn from a random tensor already on the device, as LocalTrain indexes a
shard gathered onto the device once. Prints samples per second (median of
the sittings) per model. The shefl side of the comparison is
`stacked_train_bench DEVICE STEPS SITTINGS MODEL 1`: with one member its
"sequential" figure is LocalTrain's member-steps per second; times 16 gives
samples per second. Run both in the same call on the same GPU.
"""
import sys

if __name__ == "__main__" and any(a in ("-h", "--help") for a in sys.argv[1:]):
    print(__doc__.strip())  # before importing torch, which may be missing
    sys.exit(0)

import argparse
import os
import statistics
import time

import torch
from torch import nn
import torch.nn.functional as F

try:
    from shefl_client.models import Cnn  # installed with pip install ./python
except ImportError:  # from a checkout: the package is in python/
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    from shefl_client.models import Cnn  # the one the Python client trains


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = nn.Sequential()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.short(x))


class ResNet18(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.linear(F.adaptive_avg_pool2d(x, 1).flatten(1))


def samples_per_second(name, device, steps, batch=16, shard=4096):
    torch.manual_seed(1)
    model, shape = (Cnn(), (1, 28, 28)) if name == "cnn" else (ResNet18(), (3, 32, 32))
    model = model.to(device).to(memory_format=torch.channels_last)
    x = torch.randn(shard, *shape, device=device)
    y = torch.randint(0, 10, (shard,), device=device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-3)
    order = torch.randperm(shard, device=device)

    def run(n):
        for s in range(n):
            idx = order[(s * batch) % (shard - batch):][:batch]
            loss = F.cross_entropy(model(x.index_select(0, idx)), y.index_select(0, idx))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    run(20)  # warm-up: cuDNN picks its algorithms, the allocator settles
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    run(steps)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--sittings", type=int, default=5)
    ap.add_argument("--models", default="cnn,resnet18")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, device {a.device}"
          + (f" ({torch.cuda.get_device_name()})" if a.device.startswith("cuda") else ""))
    for name in a.models.split(","):
        if name not in ("cnn", "resnet18"):
            raise SystemExit(f"gpu_train_eager.py: unknown model '{name}' (cnn | resnet18)")
        runs = [samples_per_second(name, a.device, a.steps) for _ in range(a.sittings)]
        print(f"{name}: {statistics.median(runs):.0f} samples/s (median of {a.sittings}; "
              f"batch 16, {a.steps} steps a sitting)")


if __name__ == "__main__":
    main()
