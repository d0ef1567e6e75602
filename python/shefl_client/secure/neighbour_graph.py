"""The neighbour graph of SecAgg+, as common/secure/neighbour_graph.h: the
parties of a session on a ring in a pseudorandom order drawn from a public
32-byte seed (the session id), each joined to the k / 2 before and the
k / 2 after it (a Harary graph H(k, n)). A party masks with, and shares to,
its neighbours only.

The order: the sorted roster, shuffled by Fisher-Yates from the last index
down, index j in 0..i drawn from the next word w of the AES-256-CTR word
stream under HKDF-SHA256(ikm = seed, info = "shefl neighbour graph v1")
that is below 2^32 - (2^32 mod (i + 1)), as j = w mod (i + 1). A degree of
n - 1 or more is the complete graph (all pairs).
Immutable once made; thread-safe."""
from __future__ import annotations

from typing import Sequence

from .primitives import InvalidArgument, aes_ctr_words, hkdf_sha256_key

GRAPH_INFO = b"shefl neighbour graph v1"
SEED_BYTES = 32


class _WordStream:
    """The word stream read in order; drawn again twice as long when it
    runs out (the same counter start, so the words read come back the same)."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._words: list[int] = []
        self._used = 0

    def next(self) -> int:
        if self._used == len(self._words):
            self._words = [int(w) for w in aes_ctr_words(self._key, max(64, 2 * len(self._words)))]
        w = self._words[self._used]
        self._used += 1
        return w

    def below(self, m: int) -> int:
        limit = (1 << 32) - (1 << 32) % m
        while True:
            w = self.next()
            if w < limit:
                return w % m


class NeighbourGraph:
    """make(seed, parties, degree); neighbours(party); adjacent(u, v)."""

    def __init__(self, ring: list[int], half: int, complete: bool) -> None:
        self.ring = ring
        self._half = half
        self.complete = complete
        self._position = {p: i for i, p in enumerate(ring)}

    @classmethod
    def make(cls, seed: bytes, parties: Sequence[int], degree: int) -> NeighbourGraph:
        if len(seed) != SEED_BYTES:
            raise InvalidArgument("neighbour graph: seed must be 32 bytes, got %d" % len(seed))
        ring = sorted(parties)
        n = len(ring)
        if n < 2:
            raise InvalidArgument("neighbour graph: parties must hold at least 2, got %d" % n)
        if len(set(ring)) != n:
            raise InvalidArgument("neighbour graph: a party repeats")
        complete = degree >= n - 1
        if not complete and (degree < 2 or degree % 2 != 0):
            raise InvalidArgument("neighbour graph: degree must be even and 2..%d, or at least "
                                  "%d (complete) for %d parties, got %d"
                                  % (n - 2, n - 1, n, degree))
        if complete:
            return cls(ring, 0, True)
        stream = _WordStream(hkdf_sha256_key(seed, b"", GRAPH_INFO))
        for i in range(n - 1, 0, -1):
            j = stream.below(i + 1)
            ring[i], ring[j] = ring[j], ring[i]
        return cls(ring, degree // 2, False)

    def degree(self) -> int:
        return len(self.ring) - 1 if self.complete else 2 * self._half

    def adjacent(self, u: int, v: int) -> bool:
        pu, pv = self._position.get(u), self._position.get(v)
        if u == v or pu is None or pv is None:
            return False
        if self.complete:
            return True
        gap = abs(pu - pv)
        return min(gap, len(self.ring) - gap) <= self._half

    def neighbours(self, party: int) -> list[int]:
        p = self._position.get(party)
        if p is None:
            raise InvalidArgument("neighbour graph: party %d is not in it" % party)
        if self.complete:
            return [v for v in sorted(self.ring) if v != party]
        n = len(self.ring)
        out = [self.ring[(p + s) % n] for s in range(1, self._half + 1)]
        out += [self.ring[(p - s) % n] for s in range(1, self._half + 1)]
        return sorted(out)
