"""Shamir t-of-n secret sharing of byte secrets over GF(2^61 - 1), as
common/secure/shamir.h, shamir_share.h and gf61.h: any t shares give the
secret back and any t - 1 tell nothing about it. Secure aggregation shares
each party's self-mask seed and masking private key this way, so that the
coordinator can remove a survivor's self mask, or a dropped party's
pairwise masks, from any t answers.

A secret of L bytes is cut into ceil(L / 7) chunks of 7 bytes (the last
one shorter), each read as a little-endian integer below 2^56 < p and
shared with a polynomial of its own. A share is the point x (a party's
position in the roster + 1, never 0, where the secret lies) and one field
element per chunk. Wire form, big-endian: x (4) then each element (8), so
28 bytes for a 16-byte seed and 44 for a 32-byte key; the size alone tells
a truncated share. Python's integers hold a product of two elements
exactly, so the field is plain `%`. Pure functions; thread-safe."""
from __future__ import annotations

import secrets
import struct
from dataclasses import dataclass, field
from typing import Sequence

from .primitives import UINT32_MAX, DataLoss, FailedPrecondition, InvalidArgument

P = (1 << 61) - 1  # the Mersenne prime of the field
CHUNK_BYTES = 7


def gf61_add(a: int, b: int) -> int:
    return (a + b) % P


def gf61_sub(a: int, b: int) -> int:
    return (a - b) % P


def gf61_mul(a: int, b: int) -> int:
    return a * b % P


def gf61_inverse(a: int) -> int:
    """a^(p-2) (Fermat); 0 for a = 0, which callers rule out first, as in C++."""
    return pow(a, P - 2, P)


@dataclass
class ShamirShare:
    x: int = 0                                   # the evaluation point, 1..n
    y: list[int] = field(default_factory=list)  # f_c(x) for each chunk c, each below p


def shamir_chunks(secret_bytes: int) -> int:
    """ceil(secret_bytes / 7), the number of field elements of a share."""
    return (secret_bytes + CHUNK_BYTES - 1) // CHUNK_BYTES


def shamir_share_bytes(secret_bytes: int) -> int:
    """4 + 8 * chunks: the size of a share's wire form."""
    return 4 + 8 * shamir_chunks(secret_bytes)


def serialize_shamir_share(share: ShamirShare) -> bytes:
    """x (4) || each element (8), big-endian."""
    if not 0 <= share.x <= UINT32_MAX or any(not 0 <= e < 1 << 64 for e in share.y):
        raise InvalidArgument("Shamir share: x or an element does not fit its field")
    return struct.pack(">I%dQ" % len(share.y), share.x, *share.y)


def parse_shamir_share(data: bytes, secret_bytes: int) -> ShamirShare:
    """The share in `data`, a share of a `secret_bytes`-byte secret. Refuses
    (InvalidArgument) a wrong size, x = 0 and an element not below p."""
    if secret_bytes <= 0:
        raise InvalidArgument("Shamir share: empty secret")
    want = shamir_share_bytes(secret_bytes)
    if len(data) != want:
        raise InvalidArgument("Shamir share: %d bytes, expected %d for a %d-byte secret"
                              % (len(data), want, secret_bytes))
    chunks = shamir_chunks(secret_bytes)
    x, *y = struct.unpack(">I%dQ" % chunks, bytes(data))
    if x == 0:
        raise InvalidArgument("Shamir share: x = 0 (the point of the secret itself)")
    for c, e in enumerate(y):
        if e >= P:
            raise InvalidArgument("Shamir share: element %d is not below p = 2^61 - 1" % c)
    return ShamirShare(x, list(y))


def _chunk_value(secret: bytes, c: int) -> int:
    return int.from_bytes(secret[c * CHUNK_BYTES:(c + 1) * CHUNK_BYTES], "little")


def _lagrange_weights(xs: Sequence[int], z: int) -> list[int]:
    """w_i with f(z) = sum_i w_i f(xs[i]) for every f of degree < len(xs);
    xs distinct, so every denominator is nonzero."""
    w = []
    for i, xi in enumerate(xs):
        num = den = 1
        for j, xj in enumerate(xs):
            if j != i:
                num = num * (z - xj) % P
                den = den * (xi - xj) % P
        w.append(num * gf61_inverse(den) % P)
    return w


def _combine(w: Sequence[int], shares: Sequence[ShamirShare], c: int) -> int:
    return sum(wi * s.y[c] for wi, s in zip(w, shares)) % P


def shamir_split(secret: bytes, t: int, n: int) -> list[ShamirShare]:
    """n shares of `secret` (not empty), share i at x = i + 1, any t of which
    reconstruct it (1 <= t <= n). Each chunk's polynomial has degree t - 1
    and coefficients uniform below p (secrets.randbelow: the OS's private
    generator, as the C++ draws from OpenSSL's)."""
    if not secret:
        raise InvalidArgument("Shamir: empty secret")
    if t <= 0 or t > n or n > UINT32_MAX:
        raise InvalidArgument("Shamir: need 1 <= t <= n, got t = %d, n = %d" % (t, n))
    shares = [ShamirShare(i + 1, []) for i in range(n)]
    for c in range(shamir_chunks(len(secret))):
        # f_c(x) = s_c + a_1 x + ... + a_{t-1} x^{t-1}, by Horner.
        a = [secrets.randbelow(P) for _ in range(t - 1)]
        s = _chunk_value(bytes(secret), c)
        for share in shares:
            v = 0
            for k in range(t - 1, 0, -1):
                v = (v * share.x + a[k - 1]) % P
            share.y.append((v * share.x + s) % P)
    return shares


def _check_shares(shares: Sequence[ShamirShare], t: int, secret_bytes: int) -> None:
    if t <= 0 or secret_bytes <= 0:
        raise InvalidArgument("Shamir: t and the secret size must be positive")
    if len(shares) < t:
        raise FailedPrecondition("Shamir: %d shares, at least t = %d needed" % (len(shares), t))
    chunks = shamir_chunks(secret_bytes)
    seen: set[int] = set()
    for s in shares:
        if s.x == 0:
            raise InvalidArgument("Shamir: a share at x = 0")
        if s.x in seen:
            raise InvalidArgument("Shamir: two shares at x = %d" % s.x)
        seen.add(s.x)
        if len(s.y) != chunks:
            raise InvalidArgument("Shamir: the share at x = %d has %d elements, expected %d"
                                  % (s.x, len(s.y), chunks))
        if any(not 0 <= e < P for e in s.y):
            raise InvalidArgument("Shamir: the share at x = %d has an element not below p" % s.x)


def shamir_reconstruct(shares: Sequence[ShamirShare], t: int, secret_bytes: int) -> bytes:
    """The `secret_bytes`-byte secret by Lagrange interpolation at 0 over the
    first t shares. Refuses fewer than t (FailedPrecondition); a duplicate
    x, x = 0, an element not below p, a share of another size
    (InvalidArgument). Shares beyond the first t must lie on the same
    polynomials and each chunk must come back below 2^(8 * its length):
    shares of different sharings fail with DataLoss rather than yield a
    wrong secret."""
    _check_shares(shares, t, secret_bytes)
    base = list(shares[:t])
    xs = [s.x for s in base]
    chunks = shamir_chunks(secret_bytes)
    for extra in shares[t:]:
        w = _lagrange_weights(xs, extra.x)
        for c in range(chunks):
            if _combine(w, base, c) != extra.y[c]:
                raise DataLoss("Shamir: the share at x = %d does not lie on the polynomial of "
                               "the first t shares" % extra.x)
    w0 = _lagrange_weights(xs, 0)
    out = bytearray()
    for c in range(chunks):
        v = _combine(w0, base, c)
        length = min(CHUNK_BYTES, secret_bytes - c * CHUNK_BYTES)
        if v >> (8 * length):
            raise DataLoss("Shamir: the shares do not come from one sharing of a secret of "
                           "this size (a chunk came back too large)")
        out += v.to_bytes(length, "little")
    return bytes(out)


def lagrange_at(xs: Sequence[int], ys: Sequence[int], z: int) -> int:
    """The value at z of the polynomial of degree < len(xs) through the
    points (xs[i], ys[i]). xs distinct and all values below p, else
    InvalidArgument. Tests build the polynomial through t - 1 shares and a
    chosen secret with it."""
    if not xs or len(xs) != len(ys):
        raise InvalidArgument("Lagrange: need as many x as y, not none")
    if any(not 0 <= v < P for v in list(xs) + list(ys)):
        raise InvalidArgument("Lagrange: a value not below p")
    if len(set(xs)) != len(xs):
        raise InvalidArgument("Lagrange: repeated x")
    if not 0 <= z < P:
        raise InvalidArgument("Lagrange: z not below p")
    return sum(w * y for w, y in zip(_lagrange_weights(xs, z), ys)) % P
