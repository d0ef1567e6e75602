"""A Python client's side of secure aggregation (aggregation.secure;
docs/DESIGN.md, "Secure aggregation"), as the C++ daemon's
client/secure_sessions.h: one party per (round, model) for the clients it
hosts that train the model. The coordinator's stages come on the feed
(on_feed); each is answered with one Secure call: the keys on the setup
(none under clear_support), the share boxes on the roster, and, once the
boxes addressed to this party are taken and every one of its clients in
the session is trained or failed (contribute), the masked input: the sum
of its clients' words on the support C_t (secure_input), plus the masks.
The unmasking request is answered by SecureParty's rules.

Each client's error-feedback residual keeps what it did not send (all of
the update off C_t, the clipping and the rounding); it is staged when the
client's words are added and settled by the coordinator's answer to the
input, as a plain upload's is (compress.ResidualBook).

Every call and its reply are booked under (round, party, model), the input
as payload, the rest as control, as the C++ daemon and the coordinator book
them, so the books agree byte for byte.
Thread-safe: one lock for the sessions, held while a party's state
changes; the calls go out without it."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional

import grpc
import numpy as np
import numpy.typing as npt
import torch

from .. import books as B
from .._proto import shefl_pb2 as pb
from ..codec_decode import decode_index_set
from ..codec_layout import CodecError
from ..compress import ResidualBook
from ..options import log
from ..session_items import TRANSIENT, Message, StatusCode
from .messages import KeyAdvert, MaskedInput, Roster, ShareBox, UnmaskRequest
from .party import SecureParty
from .party_noise import add_party_noise, check_noise_floor
from .primitives import (DataLoss, FailedPrecondition, InvalidArgument, SecureError,
                         Words, sha256, to_key32)
from .secure_input import SecureEncoding, add_client_input, input_bytes
from .session_id import SessionParams
from .support_diagnosis import SupportDiagnosis, add_client_diagnosis, dense_bytes, union_bytes
from .shamir import serialize_shamir_share
from .share_box import SHARE_BOX_BYTES

# A stage's call waits at most this long for the coordinator's answer.
CALL_DEADLINE_S = 60.0

Key = tuple[int, int]  # (round, model)
Delta = npt.NDArray[np.float32]


class Link(NamedTuple):
    """What a Secure call needs of the connection it goes on."""
    stub: Any                            # shefl_pb2_grpc.CoordinatorStub
    metadata: tuple[tuple[str, str], ...]
    session_id: str


class AlreadyExists(SecureError):
    """A stage's message came twice (absl's AlreadyExists)."""


def support_hash(support: npt.ArrayLike) -> bytes:
    """SHA-256 of the support's coordinates, each 4 bytes big-endian
    (common/secure/public_hashes.h): what the session id binds."""
    return sha256(np.asarray(support, dtype=">u4").tobytes())


@dataclass
class _Session:
    setup: bool = False
    encoding: SecureEncoding = field(default_factory=SecureEncoding)
    party: int = 0
    threshold: int = 0  # t, from the roster
    weights: dict[int, float] = field(default_factory=dict)  # its clients in the session
    own_k: dict[int, int] = field(default_factory=dict)  # their own top-k, for the vote
    # privacy.mode distributed: their L2 clips on C_t (0: none).
    l2_clips: dict[int, float] = field(default_factory=dict)
    secure: Optional[SecureParty] = None
    boxes: bool = False       # took the boxes addressed to it
    input_sent: bool = False
    q: Optional[Words] = None  # the sum of its clients' words
    added: set[int] = field(default_factory=set)  # clients whose words are in q
    done: set[int] = field(default_factory=set)   # clients whose part is in (or failed)
    # Deltas that came before the setup.
    early: dict[int, Optional[Delta]] = field(default_factory=dict)
    # secure.diagnose (clear_support only): the dense sum and own top-k union.
    diagnose: bool = False
    diagnosis: SupportDiagnosis = field(default_factory=SupportDiagnosis)


class SecureSessions:
    """The daemon's parties. `residuals` None: error feedback off; `seed`:
    the run's, for each client's rounding; `masked` False: clear_support
    (no keys, boxes or shares: the inputs go up as they are)."""

    def __init__(self, name: str, ledger: B.Ledger, residuals: Optional[ResidualBook],
                 dim: int, seed: int, masked: bool, dp_min_multiplier: float = 0.0) -> None:
        self.name, self.ledger, self.residuals = name, ledger, residuals
        self.dim, self.seed, self.masked = dim, seed, masked
        # --dp-min-multiplier: no input from a session whose noise is below it.
        self.dp_min_multiplier = dp_min_multiplier
        self._lock = threading.Lock()
        self._sessions: dict[Key, _Session] = {}
        self._ended = 0  # the last round that ended: its sessions are gone

    def _log(self, key: Key, what: str) -> None:
        log(self.name, "secure round %d model %d: %s" % (key[0], key[1], what))

    # ------------------------------------------------------------ the feed

    def on_feed(self, link: Link, m: Message) -> None:
        """The feed thread: a secure stage's message (setup, roster, boxes,
        unmasking request); the answer goes up before this returns. A
        refusal is logged: one session's failure never ends the feed."""
        kind = m.WhichOneof("kind")
        try:
            if kind == "secure_setup":
                self._on_setup(link, m.secure_setup)
            elif kind == "secure_roster":
                self._on_roster(link, m.secure_roster)
            elif kind == "secure_boxes":
                self._on_boxes(link, m.secure_boxes)
            elif kind == "secure_unmask":
                self._on_unmask(link, m.secure_unmask)
        except (SecureError, CodecError, _CallFailed) as e:
            log(self.name, "secure aggregation: %s" % e)
        except Exception as e:  # a message this code did not foresee: the feed goes on
            log(self.name, "secure aggregation: %s: %s" % (type(e).__name__, e))

    def _on_setup(self, link: Link, s: Message) -> None:
        key = (int(s.round), int(s.model_id))
        support = decode_index_set(s.support, self.dim, self.dim)
        call = pb.SecureCall()
        with self._lock:
            if key[0] <= self._ended:
                return  # a stale setup
            session = self._sessions.setdefault(key, _Session())
            if session.setup:
                raise AlreadyExists("a second setup")
            session.setup = True
            session.party = int(s.party)
            session.encoding = SecureEncoding(support, float(s.clip), int(s.scale_bits),
                                              self.seed, key[0], key[1],
                                              [(int(g.offset), int(g.rows), int(g.cols))
                                               for g in s.vote],
                                              16 if int(s.word_bits) == 16 else 32,
                                              float(s.noise_mu), int(s.noise_seed))
            # Never in a masked session: the dense sums would give away
            # what the masks hide, whoever asks.
            session.diagnose = bool(s.diagnose) and not self.masked
            for w in s.weights:
                session.weights[int(w.client_id)] = float(w.weight)
                session.own_k[int(w.client_id)] = int(w.k)
                session.l2_clips[int(w.client_id)] = float(w.l2_clip)
            early, session.early = session.early, {}
            for client in sorted(early):  # in client order, as the C++ map
                self._add_locked(key, session, client, early[client])
            if self.masked:
                session.secure = SecureParty.create(session.party)
                advert = session.secure.advert()
                call.keys.CopyFrom(pb.SecureKeys(party=advert.party, enc_public=advert.enc_public,
                                                 mask_public=advert.mask_public))
        if not self.masked:
            self._maybe_send_input(link, key)
            return
        call.round, call.model_id, call.party = key[0], key[1], int(s.party)
        self._call_or_raise(link, call)

    def _party_session(self, key: Key, what: str) -> tuple[_Session, SecureParty]:
        """The session of `key` and its party, when it has one (self._lock
        held); FailedPrecondition(`what`) otherwise."""
        s = self._sessions.get(key)
        if s is None or s.secure is None:
            raise FailedPrecondition(what)
        return s, s.secure

    def _on_roster(self, link: Link, r: Message) -> None:
        key = (int(r.round), int(r.model_id))
        call = pb.SecureCall()
        with self._lock:
            s, me = self._party_session(key, "a roster without a setup")
            p = SessionParams(run_id=r.run_id, round=key[0], model=key[1], n=len(r.keys),
                              t=int(r.threshold), degree=int(r.degree),
                              scale_bits=s.encoding.scale_bits,
                              clip=s.encoding.clip)
            s.threshold = int(r.threshold)
            theirs = to_key32(r.support_hash, "support_hash")
            p.model_hash = to_key32(r.model_hash, "model_hash")
            # The support the roster's session id binds must be the one we have.
            if support_hash(s.encoding.support) != theirs:
                raise DataLoss("the roster's support is not the setup's")
            p.support_hash = theirs
            keys = []
            for k in r.keys:
                keys.append(KeyAdvert(int(k.party), to_key32(k.enc_public, "enc_public"),
                                      to_key32(k.mask_public, "mask_public")))
                p.roster.append(int(k.party))
            boxes = me.share_boxes(Roster(p, keys))
            call.boxes.round, call.boxes.model_id = key[0], key[1]
            for b in boxes:
                out = call.boxes.boxes.add(to=b.to, box=b.box)
                setattr(out, "from", b.from_)  # `from` is Python's
            call.party = s.party
        call.round, call.model_id = key
        self._call_or_raise(link, call)

    def _on_boxes(self, link: Link, b: Message) -> None:
        key = (int(b.round), int(b.model_id))
        with self._lock:
            s, me = self._party_session(key, "share boxes without a setup")
            boxes = []
            for x in b.boxes:
                sender = int(getattr(x, "from"))
                if len(x.box) != SHARE_BOX_BYTES:
                    raise InvalidArgument("share box from %d to %d has %d bytes, not %d"
                                          % (sender, x.to, len(x.box), SHARE_BOX_BYTES))
                boxes.append(ShareBox(sender, int(x.to), bytes(x.box)))
            me.take_boxes(boxes)
            s.boxes = True
        self._maybe_send_input(link, key)

    def _on_unmask(self, link: Link, u: Message) -> None:
        key = (int(u.round), int(u.model_id))
        call = pb.SecureCall()
        with self._lock:
            s, me = self._party_session(key, "an unmasking request without a session")
            reply = me.unmask(UnmaskRequest([int(v) for v in u.survivors],
                                                  [int(v) for v in u.dropped]))
            for party in sorted(reply.seed_shares):  # ascending, as the C++ map
                call.shares.seed_shares.add(
                    party=party, share=serialize_shamir_share(reply.seed_shares[party]))
            for party in sorted(reply.key_shares):
                call.shares.key_shares.add(
                    party=party, share=serialize_shamir_share(reply.key_shares[party]))
            call.party = s.party
        call.round, call.model_id = key
        self._call_or_raise(link, call)

    # ---------------------------------------------------------- the workers

    def contribute(self, link: Link, rnd: int, model: int, client: int,
                   delta: Optional[Delta]) -> None:
        """A worker: client `client`'s trained delta for (rnd, model) (d
        float32s, trained minus global), or None when its training failed
        (it adds nothing, but the party stops waiting for it)."""
        key = (rnd, model)
        with self._lock:
            if rnd <= self._ended:
                return  # its session is gone with its round
            s = self._sessions.setdefault(key, _Session())
            if not s.setup:
                s.early[client] = delta
                return
            self._add_locked(key, s, client, delta)
        self._maybe_send_input(link, key)

    def new_session(self) -> None:
        """A new registration: what the last connection left is gone, and a
        coordinator resumed from a checkpoint may run an ended round again."""
        with self._lock:
            self._sessions.clear()
            self._ended = 0

    def round_ended(self, rnd: int) -> None:
        """The round is over: its sessions (and any earlier) are dropped."""
        with self._lock:
            self._ended = max(self._ended, rnd)
            for key in [k for k in self._sessions if k[0] <= rnd]:
                del self._sessions[key]

    def _add_locked(self, key: Key, s: _Session, client: int, delta: Optional[Delta]) -> None:
        """Adds one client's words, with its residual in force; what it did
        not send is staged as its next residual. Caller holds the lock."""
        weight = s.weights.get(client)
        if weight is None or client in s.done:
            return
        s.done.add(client)
        if delta is None:
            return
        residual: Optional[npt.NDArray[np.float32]] = None
        if self.residuals is not None:
            r = self.residuals.in_force(client, key[1], key[0])
            if r is not None and r.numel() == delta.size:
                residual = r.detach().to("cpu", torch.float32).numpy()
        try:
            left, s.q = add_client_input(delta, weight, client, s.encoding, residual, s.q,
                                         s.own_k.get(client, 0), s.l2_clips.get(client, 0.0))
        except SecureError as e:
            self._log(key, "client %d: %s" % (client, e))
            return
        s.added.add(client)
        if s.diagnose:
            add_client_diagnosis(delta, residual, weight, s.encoding.clip,
                                 s.own_k.get(client, 0), s.diagnosis)
        if self.residuals is None:
            return
        try:
            self.residuals.stage(client, key[1], key[0], torch.from_numpy(left))
        except OSError as e:
            self._log(key, "client %d: residual not kept: %s" % (client, e))

    def _maybe_send_input(self, link: Link, key: Key) -> None:
        """The masked input, once everything for it is in; sent without the
        lock, and the residuals of its clients settled by the answer."""
        call = pb.SecureCall()
        with self._lock:
            s = self._sessions.get(key)
            if (s is None or not s.setup or s.input_sent or len(s.done) < len(s.weights)
                    or (self.masked and not s.boxes)):
                return
            s.input_sent = True
            if not s.added or s.q is None:
                self._log(key, "no client's update to send")
                return
            weight = 0.0  # summed in client order, as the coordinator does
            for c in sorted(s.added):
                weight += s.weights[c]
            # privacy.mode distributed: the noise goes in before the masks,
            # so nothing unmasked is ever without it.
            e = s.encoding
            try:
                check_noise_floor(e.noise_mu, e.scale_bits, s.threshold,
                                  [(s.weights[c], s.l2_clips.get(c, 0.0)) for c in sorted(s.added)],
                                  self.dp_min_multiplier)
                s.q = add_party_noise(e.noise_mu, e.noise_seed, e.round, e.model, s.party,
                                      int(np.asarray(e.support).size), s.q)
            except SecureError as err:
                self._log(key, str(err))
                return
            masked = MaskedInput(s.party, weight, s.q)
            if s.secure is not None:
                try:
                    masked = s.secure.mask(s.q, weight)
                except SecureError as e:
                    self._log(key, str(e))
                    return
            call.input.weight = masked.weight
            call.input.words = input_bytes(masked.y, s.encoding)
            if s.diagnose:
                call.input.dense = dense_bytes(s.diagnosis)
                call.input.own_union = union_bytes(s.diagnosis)
            call.party = s.party
            clients = sorted(s.added)
        call.round, call.model_id = key
        code = self._call(link, call)
        if code is not None:
            self._log(key, "masked input: %s" % _describe(code))
        if self.residuals is None or (code is not None and code[0] in TRANSIENT):
            return
        if code is not None:  # refused: the residual before it is back in force
            for c in clients:
                self.residuals.discard(c, key[1], key[0])

    # ----------------------------------------------------------- the calls

    def _call(self, link: Link, call: Message) -> Optional[tuple[StatusCode, str]]:
        """One Secure call, booked at both ends' sizes when it is taken;
        None, or the refusal's (status code, details)."""
        call.session_id = link.session_id
        try:
            reply = link.stub.Secure(call, metadata=link.metadata, timeout=CALL_DEADLINE_S)
        except grpc.RpcError as e:
            return e.code(), str(e.details())
        rnd, party, model = int(call.round), int(call.party), int(call.model_id)
        self.ledger.book(rnd, party, True, call.WhichOneof("stage") == "input",
                         B.wire_size(call), model)
        self.ledger.book(rnd, party, False, False, B.wire_size(reply), model)
        return None

    def _call_or_raise(self, link: Link, call: Message) -> None:
        code = self._call(link, call)
        if code is not None:
            raise _CallFailed(_describe(code))


class _CallFailed(Exception):
    """A stage's call was refused or did not get through (logged by on_feed)."""


def _describe(code: tuple[StatusCode, str]) -> str:
    return "%s: %s" % (code[0].name, code[1])
