"""The C++ models (common/learn/models.cc) in PyTorch, with the same flat
layout: the `cnn` (conv 5x5 32, conv 5x5 64, fc 512, fc 10 on 28x28x1)
and the `mlp` (fc 200, fc 200, fc classes). Parameters are registered in
the C++ order, so flat.check_layout accepts them and a Python client
trained on CPU with the C++ batch order reaches the C++ daemon's weights
bit for bit (the cnn channels-last, as the C++ one runs: in NCHW oneDNN
sums the convolutions in another order). Used by
examples/fmnist_client.py and bench/gpu_train_eager.py. Modules hold no
state beyond torch's; one per thread, as torch modules are."""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class Cnn(nn.Module):
    """shefl's `cnn`: input (N, 1, 28, 28), output (N, classes) logits."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.fc1 = nn.Linear(64 * 4 * 4, 512)
        self.fc2 = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        out: torch.Tensor = self.fc2(F.relu(self.fc1(x.flatten(1))))
        return out


class Mlp(nn.Module):
    """shefl's `mlp`: input flattened to `inputs` features."""

    def __init__(self, inputs: int = 784, classes: int = 10) -> None:
        super().__init__()
        self.fc1 = nn.Linear(inputs, 200)
        self.fc2 = nn.Linear(200, 200)
        self.fc3 = nn.Linear(200, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.fc3(F.relu(self.fc2(F.relu(self.fc1(x.flatten(1))))))
        return out


def cpp_model(config: dict[str, Any]) -> nn.Module:
    """The module for the run's `model.name` (cnn or mlp), as a Client's
    `model` function; the cnn channels-last as the C++ daemon's.
    ValueError for another name."""
    name = config.get("model", {}).get("name", "")
    if name == "cnn":
        # Module.to(memory_format=...) works but is missing from torch's overloads.
        cnn: nn.Module = Cnn().to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        return cnn
    if name == "mlp":
        return Mlp()
    raise ValueError("shefl_client.models has the cnn and the mlp, not '%s'" % name)
