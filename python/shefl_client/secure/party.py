"""One party's side of a secure-aggregation session (one round, one model),
as common/secure/party.h: a daemon, for the clients it hosts. It holds the
secrets (two X25519 key pairs and the self-mask seed) and the shares other
parties gave it, and guards them with the C++ party's checks: it answers
one unmasking request per session, never reveals both the seed share and
the key share of one party, and answers nothing when fewer than t parties
survive (docs/DESIGN.md, "Secure aggregation"). In a SecAgg+ session (the
roster's degree k > 0) "party" means a neighbour in the session's graph
(neighbour_graph.py): boxes to and from the k neighbours only, masks with
them only, t a majority of the k + 1 holders. Its boxes, masks and
replies are the C++ party's bytes, so Python and C++ daemons share a
session.
Not thread-safe: one session, driven by one thread in stage order."""
from __future__ import annotations

import copy
from dataclasses import replace
from typing import Optional, Sequence

import numpy.typing as npt

from .masks import SELF_SEED_BYTES, generate_self_seed, mask_input
from .messages import KeyAdvert, MaskedInput, Roster, ShareBox, UnmaskReply, UnmaskRequest
from .primitives import (UINT32_MAX, DataLoss, FailedPrecondition, InvalidArgument,
                         PermissionDenied, X25519KeyPair, generate_x25519_key_pair,
                         x25519_key_pair_from_private)
from .neighbour_graph import NeighbourGraph
from .session_id import make_session_id, share_holders
from .shamir import ShamirShare, shamir_split
from .share_box import (PeerShares, open_share_box, pack_peer_shares, seal_share_box,
                        unpack_peer_shares)


def _sorted_distinct(ids: Sequence[int]) -> bool:
    return all(a < b for a, b in zip(ids, ids[1:]))


def _copy_share(s: ShamirShare) -> ShamirShare:
    return replace(s, y=list(s.y))


class SecureParty:
    """Stages: advert(), share_boxes(roster), take_boxes(boxes),
    mask(q, weight), unmask(request); each refuses what the C++ refuses,
    with the same status code (primitives' error classes).

    Unlike the C++ party, this one cannot wipe its secrets when it goes:
    Python's bytes are immutable and the collector frees them when it will,
    so the keys, the seed and the shares stay in freed memory until it is
    reused. A deployment that needs them wiped runs the C++ daemon."""

    def __init__(self, party_id: int, enc: X25519KeyPair, mask: X25519KeyPair,
                 seed: bytes) -> None:
        """Use create(); from_secrets() is for tests that pin values."""
        if not 0 <= party_id <= UINT32_MAX:
            raise InvalidArgument("secure aggregation: party id %d is not a uint32" % party_id)
        if len(seed) != SELF_SEED_BYTES:
            raise InvalidArgument("self-mask seed: expected 16 bytes, got %d" % len(seed))
        self._id = party_id
        self._enc, self._mask, self._seed = enc, mask, bytes(seed)
        # Set by share_boxes.
        self._roster: Optional[Roster] = None
        self._sid = bytes(32)
        self._t = 0
        self._graph: Optional[NeighbourGraph] = None  # SecAgg+ sessions only
        self._own: Optional[PeerShares] = None  # this party's shares of its own secrets
        # Set by take_boxes: the shares each peer gave this party.
        self._from_peers: dict[int, PeerShares] = {}
        self._masked = False
        self._answered: Optional[UnmaskRequest] = None

    @classmethod
    def create(cls, party_id: int) -> SecureParty:
        """Fresh keys and seed for party `party_id`, from the OS's private
        generator: one party object per session."""
        return cls(party_id, generate_x25519_key_pair(), generate_x25519_key_pair(),
                   generate_self_seed())

    @classmethod
    def from_secrets(cls, party_id: int, enc_private: bytes, mask_private: bytes,
                     seed: bytes) -> SecureParty:
        """A party with given secrets, so that a test can pin what it
        derives. Never reuse secrets in a second session: its seed revealed
        in one session and its masking key in another would unmask its
        input."""
        return cls(party_id, x25519_key_pair_from_private(enc_private),
                   x25519_key_pair_from_private(mask_private), seed)

    @property
    def id(self) -> int:
        return self._id

    @property
    def session_id(self) -> bytes:
        return self._sid

    def _linked(self, peer: int) -> bool:
        """Whether this party and `peer` share and mask: neighbours in a
        graph, every pair without one."""
        return self._graph is None or self._graph.adjacent(self._id, peer)

    # Stage 1 ---------------------------------------------------------------

    def advert(self) -> KeyAdvert:
        """What the party advertises: its two public keys."""
        return KeyAdvert(self._id, self._enc.public_key, self._mask.public_key)

    # Stage 2 ---------------------------------------------------------------

    def _check_roster(self, roster: Roster) -> None:
        ids = [k.party for k in roster.keys]
        if not _sorted_distinct(ids) or ids != list(roster.params.roster):
            raise InvalidArgument("secure aggregation: the roster's parties are not distinct and "
                                  "ascending, or differ from the session's")
        if self._id not in ids:
            raise InvalidArgument("secure aggregation: party %d is not in the roster" % self._id)
        # t must be a majority of n: else a coordinator lying to two halves
        # of the parties could collect one party's seed and its key.
        # With a graph the same holds of the k + 1 holders of each secret.
        n, t, m = roster.params.n, roster.params.t, share_holders(roster.params)
        if n != len(ids) or m > n or t < m // 2 + 1 or t > m:
            graph = (", degree %d: %d holders of each secret" % (roster.params.degree, m)
                     if roster.params.degree > 0 else "")
            raise PermissionDenied("secure aggregation: refused: the roster's t = %d of n = %d "
                                   "(%d parties listed%s) is not a majority: t must be from %d "
                                   "to %d" % (t, n, len(ids), graph, m // 2 + 1, m))
        mine = roster.keys[ids.index(self._id)]
        if mine.enc_public != self._enc.public_key or mine.mask_public != self._mask.public_key:
            raise PermissionDenied("secure aggregation: the roster gives party %d other keys "
                                   "than its own" % self._id)

    def share_boxes(self, roster: Roster) -> list[ShareBox]:
        """Checks the roster (it lists this party with its own keys, ids
        ascending and distinct, the params' roster the same ids), derives
        the session id, splits the seed and the masking key t of n, and
        seals one box for every other party."""
        if self._roster is not None:
            raise FailedPrecondition("secure aggregation: a second roster")
        self._check_roster(roster)
        sid = make_session_id(roster.params)
        if roster.params.degree > 0:
            self._graph = NeighbourGraph.make(sid, roster.params.roster, roster.params.degree)
        n, t = roster.params.n, roster.params.t
        seed_shares = shamir_split(self._seed, t, n)
        key_shares = shamir_split(self._mask.private_key, t, n)
        boxes: list[ShareBox] = []
        own: Optional[PeerShares] = None
        for i in range(n):
            peer = roster.keys[i]
            shares = PeerShares(seed_shares[i], key_shares[i])
            if peer.party == self._id:
                own = shares
                continue
            if not self._linked(peer.party):  # a non-neighbour's shares are never sent
                continue
            box = seal_share_box(pack_peer_shares(shares), sid, self._id, peer.party,
                                 self._enc.private_key, peer.enc_public)
            boxes.append(ShareBox(self._id, peer.party, box))
        self._roster = copy.deepcopy(roster)
        self._sid, self._t, self._own = sid, t, own
        return boxes

    def take_boxes(self, boxes: Sequence[ShareBox]) -> None:
        """The boxes addressed to this party. Each must open (else DataLoss:
        the coordinator or a peer tampered); their senders are the peers
        whose pairwise masks this party adds. A second call replaces what
        the first took, as in C++."""
        if self._roster is None or self._masked:
            raise FailedPrecondition("secure aggregation: boxes out of stage")
        ids = self._roster.params.roster
        my_x = ids.index(self._id) + 1
        by_party = {k.party: k for k in self._roster.keys}
        got: dict[int, PeerShares] = {}
        for b in boxes:
            sender = by_party.get(b.from_)
            if (b.to != self._id or b.from_ == self._id or sender is None or b.from_ in got
                    or not self._linked(b.from_)):
                raise InvalidArgument("secure aggregation: a box from %d to %d is not one party "
                                      "%d takes" % (b.from_, b.to, self._id))
            plain = open_share_box(b.box, self._sid, b.from_, self._id, self._enc.private_key,
                                   sender.enc_public)
            shares = unpack_peer_shares(plain)
            if shares.self_seed.x != my_x:
                raise DataLoss("secure aggregation: party %d's shares are not at party %d's "
                               "point" % (b.from_, self._id))
            got[b.from_] = shares
        self._from_peers = got

    # Stage 3 ---------------------------------------------------------------

    def mask(self, q: npt.ArrayLike, weight: float) -> MaskedInput:
        """y = q + masks, over the peers whose boxes arrived."""
        if self._roster is None or self._masked:
            raise FailedPrecondition("secure aggregation: input out of stage")
        if len(self._from_peers) + 1 < self._t:
            raise FailedPrecondition("secure aggregation: refused to mask: %d parties shared with "
                                     "party %d (itself included), fewer than t = %d"
                                     % (len(self._from_peers) + 1, self._id, self._t))
        peers = {k.party: k.mask_public for k in self._roster.keys if k.party in self._from_peers}
        y = mask_input(q, self._id, self._seed, self._mask.private_key, peers, self._sid)
        self._masked = True
        return MaskedInput(self._id, weight, y)

    # Stage 4 ---------------------------------------------------------------

    def _check_request(self, r: UnmaskRequest) -> None:
        if not self._masked:
            raise FailedPrecondition("secure aggregation: unmasking asked of a party that sent "
                                     "no input")
        s, d = sorted(r.survivors), sorted(r.dropped)
        if not _sorted_distinct(s) or not _sorted_distinct(d):
            raise InvalidArgument("secure aggregation: a party named twice")
        both = sorted(set(s) & set(d))
        if both:
            raise PermissionDenied("secure aggregation: refused: the request asks for both the "
                                   "seed and the key of party %d" % both[0])
        # The survivors among the holders of this party's secrets (every
        # party without a graph): fewer than t, and nothing is answered.
        holders = sum(1 for v in s if v == self._id or self._linked(v))
        if holders < self._t:
            raise PermissionDenied("secure aggregation: refused: %d survivors among the holders "
                                   "of party %d's shares, fewer than t = %d"
                                   % (holders, self._id, self._t))
        if self._id not in s:
            raise InvalidArgument("secure aggregation: asked, but not a survivor")
        for v in s:
            if v != self._id and self._linked(v) and v not in self._from_peers:
                raise InvalidArgument("secure aggregation: survivor %d sent this party no shares"
                                      % v)
        for v in d:
            if self._linked(v) and v not in self._from_peers:
                raise InvalidArgument("secure aggregation: dropped party %d sent this party no "
                                      "shares" % v)

    def unmask(self, request: UnmaskRequest) -> UnmaskReply:
        """The shares the request asks for, after the checks above. The same
        request again gets the same answer (a retried call); any other
        request of the session is refused, since two answers together could
        give one party's seed and key."""
        # The same request means the same sets, in whatever order.
        if self._answered is not None and (
                self._answered.survivors != sorted(request.survivors)
                or self._answered.dropped != sorted(request.dropped)):
            raise PermissionDenied("secure aggregation: refused: the session's unmasking was "
                                   "answered already, for other parties")
        self._check_request(request)
        if self._own is None:  # set with the roster, which masking needs: never here
            raise FailedPrecondition("secure aggregation: no roster")
        reply = UnmaskReply(self._id)
        for v in sorted(request.survivors):
            if v == self._id:
                reply.seed_shares[v] = _copy_share(self._own.self_seed)
            elif self._linked(v):
                reply.seed_shares[v] = _copy_share(self._from_peers[v].self_seed)
        for d in sorted(request.dropped):
            if self._linked(d):
                reply.key_shares[d] = _copy_share(self._from_peers[d].mask_private)
        self._answered = UnmaskRequest(sorted(request.survivors), sorted(request.dropped))
        return reply
