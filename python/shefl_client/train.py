"""What a user's training function gets (TrainContext), the C++ daemon's
batch order, and `sgd_train`, a reference loop that trains as the C++
daemon does (common/learn/train.cc): the same batches, SGD with momentum
and weight decay (or Adam), cross-entropy, FedProx's term. A user's own
loop may do anything; with sgd_train on the same model and data on CPU a
Python client reaches what a C++ daemon would."""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterator, Optional

import torch
import torch.nn.functional as F
from torch.amp.autocast_mode import autocast as Autocast

from . import precision as P
from . import rng as R
from .data import Dataset


@dataclasses.dataclass
class TrainContext:
    """One (client, model) task. The task's settings come from the
    coordinator (lr already decayed for the round); `indices` are the
    client's training samples in `dataset` when the run's data set is one
    the Python client loads (else None: bring your own data). `seed` and
    `precision` are read from `config`. One per task: not shared between
    threads."""

    round: int
    client_id: int
    model_id: int
    lr: float
    local_epochs: int
    local_steps: int
    batch_size: int
    prox_mu: float
    config: dict[str, Any]
    device: torch.device
    dataset: Optional[Dataset] = None
    indices: Optional[list[int]] = None
    global_flat: Optional[torch.Tensor] = None  # the downloaded weights (FedProx's reference)
    seed: int = dataclasses.field(init=False)
    # train.precision: fp32, or bf16 autocast of the forward pass and loss
    # (auto resolved on this device: precision.py)
    precision: str = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.batch_size = max(1, int(self.batch_size))
        self.seed = int(self.config.get("seed", 1))
        self.precision = P.resolve(str(self.config.get("train", {}).get("precision", "fp32")),
                                   self.device)

    @classmethod
    def for_task(cls, task: Any, model_id: int, config: dict[str, Any], device: torch.device,
                 dataset: Optional[Dataset] = None, indices: Optional[list[int]] = None,
                 global_flat: Optional[torch.Tensor] = None) -> TrainContext:
        """The context of `task` (a shefl_pb2.Task) for one of its models."""
        t = task.train
        # seed_round: under round.mode buffered `round` is the task's ticket,
        # and the batch order follows the synchronous round it stands for.
        seed_round = int(getattr(task, "seed_round", 0))
        return cls(round=seed_round or int(task.round), client_id=int(task.client_id), model_id=int(model_id),
                   lr=float(t.lr), local_epochs=int(t.local_epochs),
                   local_steps=int(t.local_steps), batch_size=int(t.batch_size),
                   prox_mu=float(t.prox_mu), config=config, device=device, dataset=dataset,
                   indices=indices, global_flat=global_flat)

    def autocast(self) -> Autocast:
        """A context for the forward pass and loss: autocast to bf16 when
        the run's train.precision is bf16 (weights stay fp32), else nothing."""
        kind = torch.device(self.device).type
        return Autocast(kind, dtype=torch.bfloat16, enabled=self.precision == "bf16")

    def batch_order_rng(self) -> R.MT19937_64:
        return R.make_rng(self.seed, R.BATCH_ORDER, (self.round, self.client_id, self.model_id))

    def batches(self, fold_lone: bool = False) -> Iterator[tuple[int, list[int]]]:
        """Lists of sample indices, batch by batch, in the C++ daemon's
        order: each pass reshuffles the shard; the last batch of a pass may
        be short (`fold_lone`: a lone last sample joins the batch before);
        local_steps > 0 stops after that many batches. Yields (pass, ids)."""
        if self.indices is None:
            raise ValueError("batches() needs the client's shard (ctx.indices is None when "
                             "the Client was given num_samples: bring your own batches)")
        ids = list(self.indices)
        n = len(ids)
        if n == 0:
            return
        ranges = [(b, min(n, b + self.batch_size)) for b in range(0, n, self.batch_size)]
        if fold_lone and len(ranges) > 1 and ranges[-1][1] - ranges[-1][0] == 1:
            ranges.pop()
            ranges[-1] = (ranges[-1][0], n)
        rng = self.batch_order_rng()
        steps, p = 0, 0
        while (steps < self.local_steps) if self.local_steps > 0 else (p < self.local_epochs):
            R.shuffle(ids, rng)
            for lo, hi in ranges:
                if self.local_steps > 0 and steps >= self.local_steps:
                    break
                yield p, ids[lo:hi]
                steps += 1
            p += 1

    def samples_trained(self) -> int:
        """What the daemon books as train_samples for this task."""
        if self.local_steps > 0:
            return self.local_steps * self.batch_size
        return len(self.indices or []) * max(1, self.local_epochs)


def _optimizer(model: torch.nn.Module, cfg: dict[str, Any], lr: float) -> torch.optim.Optimizer:
    train = cfg.get("train", {})
    if train.get("optimizer", "sgd") == "adam":
        return torch.optim.Adam(model.parameters(), lr=lr,
                                weight_decay=float(train.get("weight_decay", 0.001)))
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=float(train.get("momentum", 0)),
                           weight_decay=float(train.get("weight_decay", 0.001)))


def _local_lr(cfg: dict[str, Any], lr: float, i: int, n: int) -> float:
    if cfg.get("train", {}).get("lr_schedule", "constant") != "cosine" or n <= 0:
        return lr
    return lr * 0.5 * (1.0 + math.cos(math.pi * float(i) / float(n)))


def sgd_train(model: torch.nn.Module, ctx: TrainContext) -> float:
    """Trains `model` in place on ctx's shard as the C++ daemon would;
    returns the mean cross-entropy over every sample seen."""
    if ctx.dataset is None or ctx.indices is None:
        raise ValueError("sgd_train needs the run's data set (ctx.dataset)")
    x_all = torch.from_numpy(ctx.dataset.x)
    y_all = torch.from_numpy(ctx.dataset.y)
    model.train(True)
    opt = _optimizer(model, ctx.config, ctx.lr)
    prox: Optional[list[torch.Tensor]] = None
    if ctx.prox_mu > 0 and ctx.global_flat is not None:
        prox, offset = [], 0
        for w in model.parameters():
            prox.append(ctx.global_flat[offset:offset + w.numel()].view(w.shape).to(w.device))
            offset += w.numel()
    has_buffers = any(True for _ in model.buffers())
    by_steps = ctx.local_steps > 0
    loss_sum, seen, step = 0.0, 0, 0
    pass_sum: Optional[torch.Tensor] = None
    current = -1
    for p, ids in ctx.batches(fold_lone=has_buffers):
        if p != current:
            if pass_sum is not None:
                loss_sum += float(pass_sum)
            pass_sum, current = torch.zeros(()), p
        lr = _local_lr(ctx.config, ctx.lr, step if by_steps else p,
                       ctx.local_steps if by_steps else ctx.local_epochs)
        for g in opt.param_groups:
            g["lr"] = lr
        idx = torch.tensor(ids, dtype=torch.int64)
        x = x_all.index_select(0, idx).to(ctx.device)
        y = y_all.index_select(0, idx).to(ctx.device)
        opt.zero_grad()
        with ctx.autocast():
            loss = F.cross_entropy(model(x), y).float()
        total = loss
        if prox is not None:
            reg = sum((w - r).pow(2).sum() for w, r in zip(model.parameters(), prox))
            total = loss + reg * (ctx.prox_mu / 2)
        torch.autograd.backward(total)  # total.backward(), which has no annotations
        opt.step()
        pass_sum += loss.detach().float().cpu() * float(len(ids))
        seen += len(ids)
        step += 1
    if pass_sum is not None:
        loss_sum += float(pass_sum)
    if not math.isfinite(loss_sum):
        raise ValueError("local training diverged: loss %r (lr %r)" % (loss_sum, ctx.lr))
    return loss_sum / seen if seen else 0.0
