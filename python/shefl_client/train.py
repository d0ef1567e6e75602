"""What a user's training function gets (TrainContext), the C++ daemon's
batch order, and `sgd_train`, a reference loop that trains as the C++
daemon does (common/learn/train.cc): the same batches, SGD with momentum
and weight decay (or Adam), cross-entropy, FedProx's term. A user's own
loop may do anything; with sgd_train on the same model and data on CPU a
Python client reaches what a C++ daemon would."""
import math

import torch
import torch.nn.functional as F

from . import rng as R


class TrainContext:
    """One (client, model) task. The task's settings come from the
    coordinator (lr already decayed for the round); `indices` are the
    client's training samples in `dataset` when the run's data set is one
    the Python client loads (else None: bring your own data)."""

    def __init__(self, task, model_id, config, device, dataset=None, indices=None,
                 global_flat=None):
        t = task.train
        self.round = int(task.round)
        self.client_id = int(task.client_id)
        self.model_id = int(model_id)
        self.lr = t.lr
        self.local_epochs = int(t.local_epochs)
        self.local_steps = int(t.local_steps)
        self.batch_size = max(1, int(t.batch_size))
        self.prox_mu = t.prox_mu
        self.config = config
        self.seed = int(config.get("seed", 1))
        self.device = device
        self.dataset = dataset
        self.indices = indices
        self.global_flat = global_flat  # the downloaded weights (FedProx's reference)
        # train.precision: fp32, or bf16 autocast of the forward pass and loss
        self.precision = config.get("train", {}).get("precision", "fp32")

    def autocast(self):
        """A context for the forward pass and loss: autocast to bf16 when
        the run's train.precision is bf16 (weights stay fp32), else nothing."""
        kind = torch.device(self.device).type
        return torch.autocast(kind, dtype=torch.bfloat16, enabled=self.precision == "bf16")

    def batch_order_rng(self):
        return R.make_rng(self.seed, R.BATCH_ORDER, (self.round, self.client_id, self.model_id))

    def batches(self, fold_lone=False):
        """Lists of sample indices, batch by batch, in the C++ daemon's
        order: each pass reshuffles the shard; the last batch of a pass may
        be short (`fold_lone`: a lone last sample joins the batch before);
        local_steps > 0 stops after that many batches. Yields (pass, ids)."""
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

    def samples_trained(self):
        """What the daemon books as train_samples for this task."""
        if self.local_steps > 0:
            return self.local_steps * self.batch_size
        return len(self.indices or []) * max(1, self.local_epochs)


def _optimizer(model, cfg, lr):
    train = cfg.get("train", {})
    if train.get("optimizer", "sgd") == "adam":
        return torch.optim.Adam(model.parameters(), lr=lr,
                                weight_decay=float(train.get("weight_decay", 0.001)))
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=float(train.get("momentum", 0)),
                           weight_decay=float(train.get("weight_decay", 0.001)))


def _local_lr(cfg, lr, i, n):
    if cfg.get("train", {}).get("lr_schedule", "constant") != "cosine" or n <= 0:
        return lr
    return lr * 0.5 * (1.0 + math.cos(math.pi * float(i) / float(n)))


def sgd_train(model, ctx):
    """Trains `model` in place on ctx's shard as the C++ daemon would;
    returns the mean cross-entropy over every sample seen."""
    if ctx.dataset is None or ctx.indices is None:
        raise ValueError("sgd_train needs the run's data set (ctx.dataset)")
    x_all = torch.from_numpy(ctx.dataset.x)
    y_all = torch.from_numpy(ctx.dataset.y)
    model.train(True)
    opt = _optimizer(model, ctx.config, ctx.lr)
    prox = None
    if ctx.prox_mu > 0 and ctx.global_flat is not None:
        prox, offset = [], 0
        for p in model.parameters():
            prox.append(ctx.global_flat[offset:offset + p.numel()].view(p.shape).to(p.device))
            offset += p.numel()
    has_buffers = any(True for _ in model.buffers())
    by_steps = ctx.local_steps > 0
    loss_sum, seen, pass_sum, step = 0.0, 0, None, 0
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
        total.backward()
        opt.step()
        pass_sum += loss.detach().float().cpu() * float(len(ids))
        seen += len(ids)
        step += 1
    if pass_sum is not None:
        loss_sum += float(pass_sum)
    if not math.isfinite(loss_sum):
        raise ValueError("local training diverged: loss %r (lr %r)" % (loss_sum, ctx.lr))
    return loss_sum / seen if seen else 0.0
