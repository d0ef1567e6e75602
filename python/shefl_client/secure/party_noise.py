"""Distributed differential privacy's noise, as common/secure/party_noise.h:
before masking, a party adds Skellam noise of variance mu,
Poisson(mu/2) - Poisson(mu/2), to each of its K value words, so that the
unmasked sum of any t survivors carries at least t mu. Every draw is the C++
party's bit for bit: the same uniform stream (the AES-256-CTR keystream
under the party's noise key from the all-zero counter block, 8 bytes at a
time little-endian, top 53 bits times 2^-53), the same algorithms (Knuth's
product below lambda 10, Hoermann's PTRS above), and the same IEEE double
operations in the same order: Python floats are doubles, and math.log,
math.log1p, math.exp and math.sqrt are the C library's.
Pure functions but for UniformStream, which is one caller's."""
from __future__ import annotations

import math
import secrets
import struct

import numpy as np

from .primitives import FailedPrecondition, InvalidArgument, Words, aes_ctr_keystream, sha256

_UNIFORMS_PER_CHUNK = 4096
_CHUNK_BYTES = 8 * _UNIFORMS_PER_CHUNK
_TWO_PI = 6.283185307179586
_TWO_POW_53 = 2.0 ** -53


class UniformStream:
    """Uniform doubles in [0, 1) from the AES-256-CTR keystream under a key,
    made 4,096 at a time (chunk c from counter block c * 2048)."""

    def __init__(self, key: bytes) -> None:
        self._key = bytes(key)
        self._chunk = 0
        self._values: list[int] = []
        self._at = 0
        self.drawn = 0

    def _refill(self) -> None:
        iv = (self._chunk * (_CHUNK_BYTES // 16)).to_bytes(16, "big")
        block = aes_ctr_keystream(self._key, iv, _CHUNK_BYTES)
        self._values = list(struct.unpack("<%dQ" % _UNIFORMS_PER_CHUNK, block))
        self._chunk += 1
        self._at = 0

    def next(self) -> float:
        if self._at == len(self._values):
            self._refill()
        w = self._values[self._at]
        self._at += 1
        self.drawn += 1
        return float(w >> 11) * _TWO_POW_53


def _log_factorial_small(k: int) -> float:
    s = 0.0
    for i in range(2, k + 1):
        s += math.log(float(i))
    return s


def log_poisson_pmf(k: int, lam: float) -> float:
    """log P(X = k), X ~ Poisson(lam): Stirling's series written around lam
    for k >= 10, as LogPoissonPmf."""
    if k < 10:
        return -lam + float(k) * math.log(lam) - _log_factorial_small(k)
    dk = float(k)
    d = dk - lam
    k2 = dk * dk
    series = 1 / (12 * dk) - 1 / (360 * dk * k2) + 1 / (1260 * dk * k2 * k2)
    return d - dk * math.log1p(d / lam) - 0.5 * math.log(_TWO_PI * dk) - series


def _sample_ptrs(lam: float, u: UniformStream) -> int:
    slam = math.sqrt(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    while True:
        U = u.next() - 0.5
        V = u.next()
        us = 0.5 - abs(U)
        kf = math.floor((2 * a / us + b) * U + lam + 0.43)
        if us >= 0.07 and V <= v_r:
            return int(kf)
        if kf < 0 or (us < 0.013 and V > us):
            continue
        ratio = V * inv_alpha / (a / (us * us) + b)
        if ratio <= 0:
            return int(kf)
        if math.log(ratio) <= log_poisson_pmf(int(kf), lam):
            return int(kf)


def sample_poisson(lam: float, u: UniformStream) -> int:
    """One draw of Poisson(lam), as SamplePoisson."""
    if not lam > 0:
        return 0
    if lam >= 10:
        return _sample_ptrs(lam, u)
    limit = math.exp(-lam)
    k = 0
    p = u.next()
    while p > limit:
        k += 1
        p *= u.next()
    return k


def sample_skellam(mu: float, u: UniformStream) -> int:
    """Poisson(mu/2) - Poisson(mu/2), the first drawn first."""
    a = sample_poisson(mu / 2, u)
    b = sample_poisson(mu / 2, u)
    return a - b


def party_noise_key(seed: int, rnd: int, model: int, party: int) -> bytes:
    """The party's noise key for (round, model): fresh when seed is 0, else
    SHA-256 of the label, the seed, the round, the model and the party."""
    if seed == 0:
        return secrets.token_bytes(32)
    return sha256(b"shefl party noise v1" + struct.pack("<QQII", seed, rnd & (2**64 - 1),
                                                       model, party))


def add_party_noise(noise_mu: float, noise_seed: int, rnd: int, model: int, party: int,
                    k: int, q: Words) -> Words:
    """q with one Skellam(noise_mu) draw added to each of its first k words
    (mod 2^32); q itself when noise_mu is 0. InvalidArgument as
    AddPartyNoise refuses."""
    if noise_mu == 0:
        return q
    if not (noise_mu > 0) or not math.isfinite(noise_mu) or noise_mu > 2.0 ** 50:
        raise InvalidArgument("privacy: a noise variance of %g is not in (0, 2^50]" % noise_mu)
    if q.size < k:
        raise InvalidArgument("privacy: an input of %d words for a support of %d" % (q.size, k))
    u = UniformStream(party_noise_key(noise_seed, rnd, model, party))
    noise = [sample_skellam(noise_mu, u) & 0xFFFFFFFF for _ in range(k)]
    out = q.copy()
    out[:k] += np.asarray(noise, dtype=np.uint32)
    return out


def check_noise_floor(noise_mu: float, scale_bits: int, threshold: int,
                      clips: list[tuple[float, float]], min_multiplier: float) -> None:
    """A party's own floor (--dp-min-multiplier), as CheckNoiseFloor: the
    session's t survivors' noise, sqrt(t mu), must be at least min_multiplier
    times max(weight x L2 clip) 2^f over the party's (weight, clip) pairs,
    and every client must have a clip. FailedPrecondition otherwise; nothing
    is checked when min_multiplier is 0."""
    if min_multiplier <= 0:
        return
    unit = 0.0
    for weight, l2_clip in clips:
        if not l2_clip > 0:
            raise FailedPrecondition("privacy: the session gives a client no L2 clip, and this "
                                     "daemon asks for distributed DP (--dp-min-multiplier)")
        unit = max(unit, weight * l2_clip)
    unit = math.ldexp(unit, scale_bits)
    noise = math.sqrt(float(threshold) * max(noise_mu, 0.0))
    if not noise >= min_multiplier * unit * (1 - 1e-9):
        raise FailedPrecondition("privacy: the session's noise is %g times what one client can "
                                 "move its sum, below --dp-min-multiplier %g; the input is not "
                                 "sent" % (noise / unit, min_multiplier))
