"""The training sets a Python client can load the way the C++ daemon does
(common/data/): Fashion-MNIST and MNIST from their IDX files, normalised
with the same float32 table, and the synthetic Gaussian mixture drawn from
the run's seed. Other data sets: bring your own (Client's `num_samples`
and training function)."""
from __future__ import annotations

import gzip
import math
import os
from typing import Any

import numpy as np
import numpy.typing as npt

from . import rng as R

STANDARD_ROOTS = {"fmnist": "/usr/share/datasets/fashion-mnist",
                  "mnist": "/usr/share/datasets/mnist"}
_NORMALISATION = {"fmnist": (0.2860, 0.3530), "mnist": (0.1307, 0.3081)}


class DataError(ValueError):
    """A data set that cannot be loaded; the message names the file or key."""


class Dataset:
    """x: float32 array (N, 1, H, W) or (N, F); y: int64 array (N,).
    Read-only once loaded: shared by the worker threads."""

    def __init__(self, name: str, x: npt.NDArray[np.float32], y: npt.NDArray[np.int64],
                 num_classes: int) -> None:
        self.name, self.x, self.y, self.num_classes = name, x, y, num_classes

    def __len__(self) -> int:
        return len(self.y)


def _read(path: str) -> bytes:
    for candidate in (path, path + ".gz"):
        if os.path.exists(candidate):
            with open(candidate, "rb") as f:
                data = f.read()
            return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    raise DataError("%s(.gz): no such file" % path)


def _idx(path: str, magic: int, dims: int) -> npt.NDArray[np.uint8]:
    data = _read(path)
    header = 4 + 4 * dims
    if len(data) < header:
        raise DataError("%s: truncated IDX header" % path)
    got = int.from_bytes(data[:4], "big")
    if got != magic:
        raise DataError("%s: bad IDX magic number %d, expected %d" % (path, got, magic))
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    body = np.frombuffer(data, dtype=np.uint8, offset=header)
    if body.size < int(np.prod(shape)):
        raise DataError("%s: truncated: the header promises %d bytes" % (path, int(np.prod(shape))))
    return body[:int(np.prod(shape))].reshape(shape)


def load_idx(root: str, name: str, train: bool = True) -> Dataset:
    """Fashion-MNIST (`fmnist`) or MNIST from `root`, as ReadIdx does."""
    prefix = "train" if train else "t10k"
    images = _idx(os.path.join(root, prefix + "-images-idx3-ubyte"), 2051, 3)
    labels = _idx(os.path.join(root, prefix + "-labels-idx1-ubyte"), 2049, 1)
    if len(images) != len(labels):
        raise DataError("%s holds %d images but %d labels" % (root, len(images), len(labels)))
    mean, std = (np.float32(v) for v in _NORMALISATION[name])
    table = (np.arange(256, dtype=np.float32) / np.float32(255.0) - mean) / std
    x = table[images].reshape(len(images), 1, images.shape[1], images.shape[2])
    return Dataset(name, x, labels.astype(np.int64), 10)


def synthetic(data: dict[str, Any], seed: int, train: bool = True) -> Dataset:
    """The synthetic Gaussian mixture (common/data/data_synthetic.cc)."""
    k, f = int(data.get("synthetic_classes", 4)), int(data.get("synthetic_features", 20))
    n = int(data.get("synthetic_train", 2000) if train else data.get("synthetic_test", 500))
    mean_rng = R.make_rng(seed, R.SYNTHETIC, (1,))
    scale = 3.0 / math.sqrt(float(f))
    means = [scale * R.standard_normal(mean_rng) for _ in range(k * f)]
    rng = R.make_rng(seed, R.SYNTHETIC, (2 if train else 3,))
    labels = R.shuffle([i % k for i in range(n)], rng)
    x = np.empty((n, f), dtype=np.float32)
    for i, y in enumerate(labels):
        base = y * f
        x[i] = [means[base + j] + R.standard_normal(rng) for j in range(f)]
    return Dataset("synthetic", x, np.array(labels, dtype=np.int64), k)


def load_training_set(config: dict[str, Any]) -> Dataset:
    """The training split named by the run's resolved config (a dict)."""
    data = config.get("data", {})
    name = data.get("dataset", "fmnist")
    if name == "synthetic":
        return synthetic(data, int(config.get("seed", 1)))
    if name in STANDARD_ROOTS:
        return load_idx(data.get("root") or STANDARD_ROOTS[name], name)
    raise DataError("data.dataset '%s' is not loaded by the Python client (fmnist, mnist, "
                    "synthetic); pass num_samples and your own data to Client" % name)
