"""The fixed-point encoding of a party's update for secure aggregation, as
common/secure/fixed_point.h: a weighted, clipped float vector x becomes
words q = round(x * 2^f) mod 2^32 that add up, mod 2^32, to the encoding
of the sum, which decodes as int32 / 2^f. It is exact as long as no
partial sum leaves the int32 range, which check_fixed_point_config
guarantees for n parties. Rounding is stochastic (up with probability
equal to the fraction), so the encoded value is unbiased; what rounding
and clipping take off comes back as the error, for the caller's residual,
so it is delayed, not lost.

With an rng.MT19937_64 the draws are the C++ ones (one Uniform01 per
coordinate, in order), so a seed gives the C++ daemon's q exactly; a numpy
Generator is accepted too, for speed, with its own draws.
Pure functions; the generator passed in is the caller's."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

import numpy as np
import numpy.typing as npt

from ..rng import MT19937_64, uniform01
from .masks import words
from .primitives import InvalidArgument, Words

MAX_SCALE_BITS = 30  # 2^30 * c must stay below 2^31 with room for rounding
Rng = Union[MT19937_64, np.random.Generator]


def _check_scale(scale_bits: int) -> None:
    if not 0 <= scale_bits <= MAX_SCALE_BITS:
        raise InvalidArgument("secure.scale_bits = %d is not in 0..%d"
                              % (scale_bits, MAX_SCALE_BITS))


def check_fixed_point_config(n: int, clip: float, scale_bits: int) -> None:
    """Passes when n parties, each value clipped to [-clip, clip] and scaled
    by 2^scale_bits, cannot overflow int32 in any partial sum:
    n * ceil(clip * 2^f) < 2^31 (the ceiling covers a value at the clip that
    rounds up). Otherwise InvalidArgument naming secure.scale_bits and
    secure.clip; also for n = 0, a clip that is not positive and finite,
    or a scale outside 0..30."""
    _check_scale(scale_bits)
    if not math.isfinite(clip) or clip <= 0:
        raise InvalidArgument("secure.clip = %g must be positive and finite" % clip)
    if n <= 0:
        raise InvalidArgument("secure aggregation: no parties")
    # Doubles, as the C++: an integer product below 2^31 is exact, and
    # rounding is monotonic, so a product at or above 2^31 never rounds below.
    per_party = float(math.ceil(math.ldexp(clip, scale_bits)))
    if float(n) * per_party >= math.ldexp(1.0, 31):
        raise InvalidArgument("secure aggregation would overflow: %d parties x clip %g x 2^%d "
                              "reaches 2^31; lower secure.scale_bits or secure.clip"
                              % (n, clip, scale_bits))


@dataclass
class FixedPointEncoding:
    q: Words                       # the words, two's complement of the integers
    error: npt.NDArray[np.float32]  # x - decode(q), per coordinate


def _uniforms(rng: Rng, count: int) -> npt.NDArray[np.float64]:
    if isinstance(rng, MT19937_64):
        return np.array([uniform01(rng) for _ in range(count)], dtype=np.float64)
    return rng.random(count)


def encode_fixed_point(x: npt.ArrayLike, clip: float, scale_bits: int,
                       rng: Rng) -> FixedPointEncoding:
    """Clips each x[i] (float32) to [-clip, clip] (the bound the overflow
    check relies on, whatever the caller did before) and rounds
    x[i] * 2^f stochastically with one uniform draw per coordinate, in
    order. Refuses NaN or infinite values (after the draws of the
    coordinates before it, as the C++) and what check_fixed_point_config
    refuses for one party."""
    check_fixed_point_config(1, clip, scale_bits)
    xf = np.asarray(x, dtype=np.float32)
    if xf.ndim != 1:
        raise InvalidArgument("fixed point: x must be a 1-D array")
    bad = np.flatnonzero(~np.isfinite(xf))
    if bad.size:
        _uniforms(rng, int(bad[0]))
        raise InvalidArgument("fixed point: coordinate %d is not finite" % int(bad[0]))
    scale = math.ldexp(1.0, scale_bits)
    xd = xf.astype(np.float64)
    v = np.clip(xd, -clip, clip) * scale
    low = np.floor(v)
    # Up with probability v - low, so E[q] = v exactly.
    q = low + (_uniforms(rng, xf.size) < v - low)
    return FixedPointEncoding((q.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32),
                              (xd - q / scale).astype(np.float32))


def decode_fixed_point(total: npt.ArrayLike, scale_bits: int) -> npt.NDArray[np.float32]:
    """A sum of encodings (mod 2^32) read as int32 / 2^f; InvalidArgument
    for a scale outside 0..30."""
    _check_scale(scale_bits)
    signed = words(total).view(np.int32).astype(np.float64)
    return np.ldexp(signed, -scale_bits).astype(np.float32)
