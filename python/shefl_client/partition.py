"""A client's shard, as every C++ daemon computes it (common/fed/partition.h,
common/fed/client_metrics.h): the same iid, Dirichlet and shards splits from
the run's seed, then the client's held-out part removed. No partition is
ever sent over the wire, so a Python client must compute the same one."""
from __future__ import annotations

import math
from typing import Any, Sequence

from . import rng as R

_TAG_IID, _TAG_DIR_SHUFFLE, _TAG_DIR_PROPORTIONS, _TAG_SHARDS = 1, 2, 3, 4
_HOLDOUT_TAG = 0x686F6C646F7574  # "holdout"
MAX_DIRICHLET_ATTEMPTS = 1000
# Methods that train once on what a proxy split leaves (FENS).
_ONE_SHOT_METHODS = {"fens"}


class PartitionError(ValueError):
    """A partition the config cannot give; the message names the key."""


def _log_gamma(rng: R.MT19937_64, shape: float) -> float:
    # Marsaglia-Tsang in log space, as common/fed/partition.cc.
    if shape < 1.0:
        u = 1.0 - R.uniform01(rng)
        return _log_gamma(rng, shape + 1.0) + math.log(u) / shape
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = R.standard_normal(rng)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = 1.0 - R.uniform01(rng)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2 or math.log(u) < 0.5 * x2 + d * (1.0 - v + math.log(v)):
            return math.log(d) + math.log(v)


def _dirichlet(rng: R.MT19937_64, alpha: float, n: int) -> list[float]:
    p = [_log_gamma(rng, alpha) for _ in range(n)]
    top = max(p)
    total = 0.0
    for i, v in enumerate(p):
        p[i] = math.exp(v - top)
        total += p[i]
    return [v / total for v in p]


def _cumulative_bounds(p: list[float], class_size: int) -> list[int]:
    b = [0] * (len(p) + 1)
    c = 0.0
    for j in range(1, len(p)):
        c += p[j - 1]
        b[j] = min(max(R.llround(c * float(class_size)), b[j - 1]), class_size)
    b[len(p)] = class_size
    return b


def _by_class(labels: Sequence[int], num_classes: int) -> list[list[int]]:
    buckets: list[list[int]] = [[] for _ in range(num_classes)]
    for i, y in enumerate(labels):
        buckets[y].append(i)
    return buckets


def _iid(n: int, num_clients: int, client: int, seed: int) -> list[int]:
    order = list(range(n))
    R.shuffle(order, R.make_rng(seed, R.PARTITION, (_TAG_IID, n, num_clients)))
    return order[client * n // num_clients:(client + 1) * n // num_clients]


def _dirichlet_split(part: dict[str, Any], labels: Sequence[int], num_classes: int,
                     num_clients: int, client: int, seed: int) -> list[int]:
    alpha, min_samples = float(part.get("alpha", 0.6)), int(part.get("min_samples", 1))
    n = len(labels)
    if not alpha > 0 or math.isinf(alpha):
        raise PartitionError("partition: partition.alpha must be > 0 and finite, got %r" % alpha)
    if min_samples < 0 or min_samples * num_clients > n:
        raise PartitionError("partition: partition.min_samples=%d cannot hold for %d clients "
                             "and %d samples" % (min_samples, num_clients, n))
    buckets = _by_class(labels, num_classes)
    for attempt in range(MAX_DIRICHLET_ATTEMPTS):
        bounds: list[list[int]] = []
        per_client = [0] * num_clients
        for k in range(num_classes):
            rng = R.make_rng(seed, R.PARTITION,
                             (_TAG_DIR_PROPORTIONS, attempt, k, n, num_clients))
            b = _cumulative_bounds(_dirichlet(rng, alpha, num_clients), len(buckets[k]))
            bounds.append(b)
            for j in range(num_clients):
                per_client[j] += b[j + 1] - b[j]
        if min(per_client) >= min_samples:
            break
    else:
        raise PartitionError(
            "partition: no Dirichlet draw in %d attempts gave every client "
            "partition.min_samples=%d samples" % (MAX_DIRICHLET_ATTEMPTS, min_samples))
    out: list[int] = []
    for k in range(num_classes):
        bucket = buckets[k]
        R.shuffle(bucket, R.make_rng(seed, R.PARTITION, (_TAG_DIR_SHUFFLE, k, n, num_clients)))
        out.extend(bucket[bounds[k][client]:bounds[k][client + 1]])
    return out


def _shards(part: dict[str, Any], labels: Sequence[int], num_classes: int, num_clients: int,
            client: int, seed: int) -> list[int]:
    n = len(labels)
    s = int(part.get("shards_per_client", 4))
    shards = int(part.get("shards", 400))
    if s < 1:
        raise PartitionError("partition: partition.shards_per_client must be >= 1, got %d" % s)
    if shards < 1 or shards > n:
        raise PartitionError("partition: partition.shards must be in [1, samples=%d], got %d"
                             % (n, shards))
    if shards < num_clients * s:
        raise PartitionError("partition: partition.shards (%d) is not enough for num_clients "
                             "(%d) * partition.shards_per_client (%d)" % (shards, num_clients, s))
    order = [i for bucket in _by_class(labels, num_classes) for i in bucket]
    perm = list(range(shards))
    R.shuffle(perm, R.make_rng(seed, R.PARTITION, (_TAG_SHARDS, shards, n, num_clients)))
    out: list[int] = []
    for e, t in enumerate(perm):
        owner = e // s if e < num_clients * s else (e - num_clients * s) % num_clients
        if owner == client:
            out.extend(order[t * n // shards:(t + 1) * n // shards])
    return out


def client_indices(part: dict[str, Any], labels: Sequence[int], num_classes: int,
                   num_clients: int, client: int, seed: int) -> list[int]:
    """The sample indices of `client` (ascending): ClientIndices in C++.
    `part` is the config's `partition` mapping; `labels` a list of ints."""
    scheme = part.get("scheme", "dirichlet")
    if not 0 <= client < num_clients:
        raise PartitionError("partition: client_id %d is outside [0, num_clients=%d)"
                             % (client, num_clients))
    if num_clients > len(labels):
        raise PartitionError("partition: num_clients (%d) exceeds the number of samples (%d)"
                             % (num_clients, len(labels)))
    if scheme == "iid":
        idx = _iid(len(labels), num_clients, client, seed)
    elif scheme == "dirichlet":
        idx = _dirichlet_split(part, list(labels), num_classes, num_clients, client, seed)
    elif scheme == "shards":
        idx = _shards(part, labels, num_classes, num_clients, client, seed)
    else:
        raise PartitionError("partition.scheme '%s' is not computed by the Python client "
                             "(iid | dirichlet | shards)" % scheme)
    return sorted(idx)


def held_out_count(n: int, fraction: float) -> int:
    if not fraction > 0 or n < 2:
        return 0
    return min(n - 1, max(1, R.llround(fraction * n)))


def split_holdout(shard: Sequence[int], fraction: float, seed: int,
                  client: int) -> tuple[list[int], list[int]]:
    """(train, held_out) of a shard, both ascending: SplitClientShard."""
    if not 0 <= fraction < 1:
        raise PartitionError("eval.client_holdout must be in [0, 1), got %r" % fraction)
    h = held_out_count(len(shard), fraction)
    if h == 0:
        return list(shard), []
    order = sorted(shard)
    R.shuffle(order, R.make_rng(seed, R.PARTITION, (_HOLDOUT_TAG, client)))
    return sorted(order[h:]), sorted(order[:h])


def training_indices(config: dict[str, Any], labels: Sequence[int], num_classes: int,
                     client: int) -> list[int]:
    """What `client` trains on under the run's resolved config (a dict):
    its partition shard less its held-out part (TrainingIndices, then
    SplitClientShard, as client/local_trainer.cc)."""
    if config.get("method") in _ONE_SHOT_METHODS:
        raise PartitionError("method '%s' (one-shot, with a proxy split) is not supported "
                             "by the Python client" % config.get("method"))
    seed = int(config.get("seed", 1))
    shard = client_indices(config.get("partition", {}), labels, num_classes,
                           int(config["clients"]["num_clients"]), client, seed)
    holdout = float(config.get("eval", {}).get("client_holdout", 0))
    return split_holdout(shard, holdout, seed, client)[0]
