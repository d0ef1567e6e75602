"""The masks of secure aggregation and their removal, as
common/secure/masks.h. Party u uploads
    y_u = q_u + PRG(b_u) + sum_{v > u} PRG(s_uv) - sum_{v < u} PRG(s_uv)
mod 2^32, word by word, where PRG is the AES-256-CTR word stream
(primitives.aes_ctr_words) under
    self:     HKDF-SHA256(b_u, salt = sid, info = "shefl self")
    pairwise: HKDF-SHA256(X25519(s_u, s_v), salt = sid,
                          info = "shefl mask" || min(u,v) || max(u,v))
(ids 4 bytes big-endian). u and v derive the same pairwise key and one
adds its stream while the other subtracts it, so the pairwise masks of two
parties that both upload cancel in the sum. The coordinator removes the
rest: each survivor's self mask from its rebuilt seed, and for each
dropped party d and survivor u the stream of s_ud that u's upload carries,
from d's rebuilt private key and u's public key.

Words are numpy uint32 arrays, whose + and - wrap mod 2^32 as the C++
uint32_t does. Pure functions; thread-safe."""
from __future__ import annotations

import secrets
from typing import Mapping

import numpy as np
import numpy.typing as npt

from .primitives import (InvalidArgument, Words, aes_ctr_words, be32, hkdf_sha256_key,
                         to_key32, x25519_shared_secret)

SELF_SEED_BYTES = 16
SELF_INFO = b"shefl self"
PAIR_INFO = b"shefl mask"


def generate_self_seed() -> bytes:
    """A fresh 16-byte self-mask seed b from the OS's private generator."""
    return secrets.token_bytes(SELF_SEED_BYTES)


def _seed(b: bytes) -> bytes:
    if len(b) != SELF_SEED_BYTES:
        raise InvalidArgument("self-mask seed: expected 16 bytes, got %d" % len(b))
    return bytes(b)


def self_mask_key(b: bytes, sid: bytes) -> bytes:
    """The AES key of the self mask of seed `b` in session `sid`."""
    return hkdf_sha256_key(_seed(b), to_key32(sid, "session id"), SELF_INFO)


def pairwise_mask_key(own_private: bytes, peer_public: bytes, u: int, v: int, sid: bytes) -> bytes:
    """The AES key of the pairwise mask of parties u != v, computed by u from
    its masking private key and v's public key, by v the other way round,
    or by the coordinator from a rebuilt private key: the same key."""
    if u == v:
        raise InvalidArgument("pairwise mask: a party (%d) paired with itself" % u)
    shared = x25519_shared_secret(own_private, peer_public)
    info = PAIR_INFO + be32(min(u, v)) + be32(max(u, v))
    return hkdf_sha256_key(shared, to_key32(sid, "session id"), info)


def words(q: npt.ArrayLike) -> Words:
    """`q` as a fresh 1-D uint32 array; refuses values that are not words."""
    a = np.asarray(q)
    if a.ndim != 1:
        raise InvalidArgument("secure aggregation: words must be a 1-D array")
    if a.dtype != np.uint32:
        if a.size and (a.dtype.kind not in "iu" or a.min() < 0 or a.max() > 0xFFFFFFFF):
            raise InvalidArgument("secure aggregation: a word is not in 0..2^32 - 1")
    return a.astype(np.uint32)


def _add_stream(key: bytes, subtract: bool, acc: Words) -> None:
    """acc += sign * PRG(key) mod 2^32, in place."""
    s = aes_ctr_words(key, acc.size)
    if subtract:
        acc -= s
    else:
        acc += s


def mask_input(q: npt.ArrayLike, u: int, b: bytes, own_private: bytes,
               peer_public: Mapping[int, bytes], sid: bytes) -> Words:
    """y_u for the encoded input q (fixed_point) of party u, its seed
    b, its masking private key, and the masking public keys of the other
    parties whose masks it adds (`peer_public` must not hold u)."""
    if u in peer_public:
        raise InvalidArgument("mask: party %d is among its own peers" % u)
    y = words(q)
    _add_stream(self_mask_key(b, sid), False, y)
    for v in sorted(peer_public):
        _add_stream(pairwise_mask_key(own_private, peer_public[v], u, v, sid), v < u, y)
    return y


def add_masked(total: npt.ArrayLike, y: npt.ArrayLike) -> Words:
    """total + y mod 2^32, word by word (a new array); an empty total takes
    y's size. InvalidArgument when the sizes differ."""
    s, w = words(total), words(y)
    if s.size == 0:
        s = np.zeros(w.size, dtype=np.uint32)
    if s.size != w.size:
        raise InvalidArgument("masked sum: an upload of %d words, the sum has %d"
                              % (w.size, s.size))
    s += w
    return s


def unmask(masked_sum: npt.ArrayLike, survivor_seeds: Mapping[int, bytes],
           dropped_private: Mapping[int, bytes], survivor_public: Mapping[int, bytes],
           sid: bytes) -> Words:
    """The sum of the survivors' q from the sum of their uploads: removes
    the self mask of every survivor (`survivor_seeds`, rebuilt) and, for
    every dropped party d (`dropped_private`, rebuilt) and survivor u, the
    stream of s_ud, from u's masking public key (`survivor_public`, which
    must name the same parties as `survivor_seeds` when anyone dropped).
    Refuses a party that is both survivor and dropped. The caller owns that
    survivors and dropped together are the roster of `sid`."""
    for d in sorted(dropped_private):
        if d in survivor_seeds:
            raise InvalidArgument("unmask: party %d is both a survivor and dropped" % d)
    if dropped_private and sorted(survivor_public) != sorted(survivor_seeds):
        raise InvalidArgument("unmask: the survivors' public keys and seeds name different "
                              "parties")
    total = words(masked_sum)
    for u in sorted(survivor_seeds):
        _add_stream(self_mask_key(survivor_seeds[u], sid), True, total)
    # u's upload holds +PRG(s_ud) when d > u and -PRG(s_ud) when d < u;
    # take away what it holds.
    for d in sorted(dropped_private):
        for u in sorted(survivor_public):
            _add_stream(pairwise_mask_key(dropped_private[d], survivor_public[u], d, u, sid),
                        d > u, total)
    return total
