"""The session id of one secure-aggregation instance (one round, one
model), as common/secure/session_id.h: SHA-256 of a canonical encoding of
everything the parties must agree on. Every key derivation takes it as the
HKDF salt and every share box authenticates it, so masks and shares of one
session are useless in another, and parties that disagree on a parameter
(the roster, t, the scale, the support, the global model) fail loudly
instead of producing a wrong sum.

The encoding, all integers big-endian:
    "shefl sid v1"                     12 ASCII bytes, no terminator
    len(run_id) (4) || run_id          UTF-8 bytes
    round (8) || model (4)
    len(roster) (4) || ids (4 each)    sorted ascending
    n (4) || t (4) || scale_bits (4)
    clip (8)                           the IEEE-754 bits of the double
    support_hash (32) || model_hash (32)
A SecAgg+ session (degree k > 0) starts "shefl sid v2" instead and appends
k (4); an all-pairs session (k = 0) has the v1 bytes, unchanged.
The lengths make it prefix-free, so no two parameter sets share bytes.
Pure functions; thread-safe."""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Union

from .primitives import InvalidArgument, be32, be64, sha256, to_key32

DOMAIN = b"shefl sid v1"
GRAPH_DOMAIN = b"shefl sid v2"


@dataclass
class SessionParams:
    run_id: Union[str, bytes] = ""
    round: int = 0
    model: int = 0
    roster: list[int] = field(default_factory=list)  # party ids, in any order
    n: int = 0                                       # must equal len(roster)
    t: int = 0                                       # 1..n
    scale_bits: int = 0                              # f of the fixed-point encoding
    clip: float = 0.0                                # c, positive and finite
    support_hash: bytes = bytes(32)                  # hash of the support C_t
    model_hash: bytes = bytes(32)                    # hash of the global model
    degree: int = 0                                  # k of the SecAgg+ graph; 0: all pairs


def share_holders(p: SessionParams) -> int:
    """How many parties hold shares of one party's secrets: k + 1 with a
    graph (its neighbours and itself), else n."""
    return p.degree + 1 if p.degree > 0 else p.n


def encode_session_params(p: SessionParams) -> bytes:
    """The canonical bytes above. Refuses (InvalidArgument) a repeated party
    id, n other than the roster's size, t outside 1..n, a clip that is not
    positive and finite, and (what C++'s fixed-width types rule out by
    themselves) an integer that does not fit its field or a hash that is
    not 32 bytes."""
    ids = sorted(p.roster)
    if len(set(ids)) != len(ids):
        raise InvalidArgument("session id: a party id repeats in the roster")
    if p.n != len(ids):
        raise InvalidArgument("session id: n = %d but the roster has %d parties"
                              % (p.n, len(ids)))
    if p.degree > 0 and (p.degree % 2 != 0 or p.degree + 1 >= p.n):
        raise InvalidArgument("session id: degree = %d is not even and below n - 1 = %d "
                              "(0: all pairs)" % (p.degree, p.n - 1))
    if p.t <= 0 or p.t > share_holders(p):
        raise InvalidArgument("session id: t = %d is not in 1..%d (the holders of each secret)"
                              % (p.t, share_holders(p)))
    if not math.isfinite(p.clip) or p.clip <= 0:
        raise InvalidArgument("session id: clip must be positive and finite")
    run_id = p.run_id.encode("utf-8") if isinstance(p.run_id, str) else bytes(p.run_id)
    out = bytearray(GRAPH_DOMAIN if p.degree > 0 else DOMAIN)
    out += be32(len(run_id)) + run_id
    out += be64(p.round) + be32(p.model)
    out += be32(len(ids)) + b"".join(be32(i) for i in ids)
    out += be32(p.n) + be32(p.t) + be32(p.scale_bits)
    out += struct.pack(">d", p.clip)  # the double's bits, most significant byte first
    out += to_key32(p.support_hash, "session id: support hash")
    out += to_key32(p.model_hash, "session id: model hash")
    if p.degree > 0:
        out += be32(p.degree)
    return bytes(out)


def make_session_id(p: SessionParams) -> bytes:
    """SHA-256 of encode_session_params(p): 32 bytes."""
    return sha256(encode_session_params(p))
