"""A model's state as one flat fp32 vector (common/learn/flat_state.h):
every tensor of named_parameters() in registration order, then every
floating tensor of named_buffers(); integer buffers (BatchNorm's
num_batches_tracked) are left out. What the coordinator stores, what
deltas and top-k indices refer to, what goes on the wire."""
from __future__ import annotations

from typing import Sequence, Union

import numpy as np
import numpy.typing as npt
import torch

# (name, tensor, is_buffer) in flat order; a layout: (name, shape, is_buffer).
StateTensor = tuple[str, torch.Tensor, bool]
LayoutEntry = tuple[str, Sequence[int], bool]


class ModelContractError(ValueError):
    """The user's module does not match the coordinator's model."""


def state_tensors(module: torch.nn.Module) -> list[StateTensor]:
    """[(name, tensor, is_buffer)] in flat order."""
    out: list[StateTensor] = [(n, p, False) for n, p in module.named_parameters()]
    out += [(n, b, True) for n, b in module.named_buffers() if b.is_floating_point()]
    return out


def flat_size(module: torch.nn.Module) -> int:
    return sum(t.numel() for _, t, _ in state_tensors(module))


def flatten(module: torch.nn.Module) -> torch.Tensor:
    """The flat fp32 state (a new 1-D tensor on the module's device)."""
    with torch.no_grad():
        parts = [t.detach().reshape(-1).to(torch.float32) for _, t, _ in state_tensors(module)]
        return torch.cat(parts) if parts else torch.empty(0)


def load_flat(module: torch.nn.Module,
              flat: Union[torch.Tensor, npt.NDArray[np.float32]]) -> None:
    """Copies a flat fp32 vector (tensor or numpy array) into the module."""
    values = torch.as_tensor(flat)
    need = flat_size(module)
    if values.numel() != need:
        raise ModelContractError("a flat state of %d floats for a module of %d"
                                 % (values.numel(), need))
    offset = 0
    with torch.no_grad():
        for _, t, _ in state_tensors(module):
            n = t.numel()
            t.copy_(values[offset:offset + n].view(t.shape))
            offset += n


def check_layout(module: torch.nn.Module, layout: Sequence[LayoutEntry],
                 model_name: str = "the coordinator's model") -> None:
    """Refuses a module whose flat layout differs from the coordinator's
    (`layout`: [(name, shape, is_buffer)] in order), naming the first
    tensor that differs. Names may differ; counts, order, kinds and shapes
    may not."""
    mine = [(n, tuple(t.shape), b) for n, t, b in state_tensors(module)]
    theirs = [(n, tuple(s), b) for n, s, b in layout]
    total_mine = sum(_numel(s) for _, s, _ in mine)
    total_theirs = sum(_numel(s) for _, s, _ in theirs)
    for i, (m, t) in enumerate(zip(mine, theirs)):
        if m[1] != t[1] or m[2] != t[2]:
            raise ModelContractError(
                "your module does not match %s: tensor %d is %s %s%s here but %s %s%s there "
                "(flat size %d here, %d there)" % (
                    model_name, i, m[0], list(m[1]), " (buffer)" if m[2] else "",
                    t[0], list(t[1]), " (buffer)" if t[2] else "", total_mine, total_theirs))
    if len(mine) != len(theirs):
        extra = mine[len(theirs):] or theirs[len(mine):]
        raise ModelContractError(
            "your module does not match %s: %d tensors here, %d there (first unmatched: %s %s); "
            "flat size %d here, %d there" % (model_name, len(mine), len(theirs), extra[0][0],
                                               list(extra[0][1]), total_mine, total_theirs))


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
