"""The C++ side's random streams, bit for bit (common/core/rng.h).

Every random choice in shefl draws from std::mt19937_64 seeded by
derive_seed(run seed, purpose, tags...), and draws are turned into numbers
by hand-written rules (uniform_below, uniform01, standard_normal,
shuffle), so a Python client computes the same partition and batch order
as a C++ daemon. The generator's twist and tempering run on numpy blocks of
312 words; the draws come out as Python ints."""
from __future__ import annotations

import math
from typing import Iterable, MutableSequence, TypeVar

import numpy as np

T = TypeVar("T")

MASK64 = (1 << 64) - 1

# SeedPurpose
PARTITION = 1
CLUSTERS = 2
COHORT = 3
PERMUTATION = 4
MODEL_INIT = 5
BATCH_ORDER = 6
SYNTHETIC = 7
TIERS = 8
SECURE_SUPPORT = 9
SECURE_ROUNDING = 10


def mix64(x: int) -> int:
    """SplitMix64's finaliser."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def derive_seed(seed: int, purpose: int, tags: Iterable[int] = ()) -> int:
    h = mix64((seed & MASK64) ^ mix64(purpose))
    for t in tags:
        h = mix64(h ^ mix64(((t & MASK64) + 0x632BE59BD9B4E019) & MASK64))
    return h


_N, _M = 312, 156
_A = np.uint64(0xB5026F5AA96619E9)
_UPPER = np.uint64(0xFFFFFFFF80000000)
_LOWER = np.uint64(0x7FFFFFFF)


class MT19937_64:
    """std::mt19937_64: the same words for the same seed. One per stream;
    not thread-safe."""

    def __init__(self, seed: int) -> None:
        mt = [seed & MASK64]
        for i in range(1, _N):
            prev = mt[-1]
            mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
        self._mt = np.array(mt, dtype=np.uint64)
        self._out: list[int] = []
        self._pos = 0

    def _twist(self) -> None:
        mt = self._mt
        one = np.uint64(1)
        # Each part reads words the sequential algorithm would see: the old
        # ones ahead of i, the new ones behind it.
        x = (mt[0:_M] & _UPPER) | (mt[1:_M + 1] & _LOWER)
        mt[0:_M] = mt[_M:_N] ^ (x >> one) ^ ((x & one) * _A)
        x = (mt[_M:_N - 1] & _UPPER) | (mt[_M + 1:_N] & _LOWER)
        mt[_M:_N - 1] = mt[0:_N - _M - 1] ^ (x >> one) ^ ((x & one) * _A)
        x = (mt[_N - 1] & _UPPER) | (mt[0] & _LOWER)
        mt[_N - 1] = mt[_M - 1] ^ (x >> one) ^ ((x & one) * _A)
        y = mt.copy()
        y ^= (y >> np.uint64(29)) & np.uint64(0x5555555555555555)
        y ^= (y << np.uint64(17)) & np.uint64(0x71D67FFFEDA60000)
        y ^= (y << np.uint64(37)) & np.uint64(0xFFF7EEE000000000)
        y ^= y >> np.uint64(43)
        self._out = y.tolist()
        self._pos = 0

    def __call__(self) -> int:
        if self._pos >= len(self._out):
            self._twist()
        v = self._out[self._pos]
        self._pos += 1
        return v


def make_rng(seed: int, purpose: int, tags: Iterable[int] = ()) -> MT19937_64:
    return MT19937_64(derive_seed(seed, purpose, tags))


def uniform_below(rng: MT19937_64, n: int) -> int:
    """Uniform in [0, n) by rejection (no modulo bias)."""
    limit = MASK64 - MASK64 % n
    r = rng()
    while r >= limit:
        r = rng()
    return r % n


def uniform01(rng: MT19937_64) -> float:
    return float(rng() >> 11) * 2.0 ** -53


def standard_normal(rng: MT19937_64) -> float:
    """Box-Muller, one value per two draws, as common/core/rng.cc."""
    u1 = 1.0 - uniform01(rng)
    u2 = uniform01(rng)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)


def shuffle(values: MutableSequence[T], rng: MT19937_64) -> MutableSequence[T]:
    """Fisher-Yates in place, with uniform_below: the C++ Shuffle."""
    for i in range(len(values), 1, -1):
        j = uniform_below(rng, i)
        values[i - 1], values[j] = values[j], values[i - 1]
    return values


def llround(x: float) -> int:
    """C's llround: halves away from zero (Python's round() goes to even)."""
    f = math.floor(abs(x))
    r = f + 1 if abs(x) - f >= 0.5 else f
    return int(r if x >= 0 else -r)
