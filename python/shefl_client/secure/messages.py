"""The messages of one secure-aggregation session (one round, one model),
as common/secure/messages.h: what a party (party.SecureParty) and the
coordinator exchange. Stages, in order (docs/DESIGN.md, "Secure
aggregation"):
  1. each party advertises two public keys (KeyAdvert);
  2. the coordinator publishes the roster (Roster), and each party sends a
     share box to every other party (ShareBox), which the coordinator
     hands on (the boxes addressed to one party);
  3. each party uploads its masked input (MaskedInput);
  4. the coordinator names the survivors and the dropped (UnmaskRequest),
     and each survivor answers with its shares (UnmaskReply).
Keys and boxes are raw bytes; words are numpy uint32 arrays."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .primitives import Words
from .session_id import SessionParams
from .shamir import ShamirShare


@dataclass
class KeyAdvert:
    party: int = 0
    enc_public: bytes = bytes(32)   # c: keys the share boxes
    mask_public: bytes = bytes(32)  # s: keys the pairwise masks


@dataclass
class Roster:
    """The session's parameters (params.roster lists the parties) and every
    party's keys, in roster order (ascending ids): a party's Shamir point is
    its position + 1."""
    params: SessionParams = field(default_factory=SessionParams)
    keys: list[KeyAdvert] = field(default_factory=list)


@dataclass
class ShareBox:
    """A box from one party to another (share_box); `from_` because
    `from` is Python's."""
    from_: int = 0
    to: int = 0
    box: bytes = b""


@dataclass
class MaskedInput:
    party: int = 0
    weight: float = 0.0  # the public weight its input carries
    y: Words = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))  # K words


@dataclass
class UnmaskRequest:
    survivors: list[int] = field(default_factory=list)  # uploaded a masked input: seed shares
    dropped: list[int] = field(default_factory=list)    # sent boxes, no input: key shares


@dataclass
class UnmaskReply:
    party: int = 0
    seed_shares: dict[int, ShamirShare] = field(default_factory=dict)  # of b_v, v a survivor
    key_shares: dict[int, ShamirShare] = field(default_factory=dict)   # of s_d, d dropped
