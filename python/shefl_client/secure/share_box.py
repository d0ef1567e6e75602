"""A share box, as common/secure/share_box.h: what party u sends party v in
the share stage, the shares of u's self-mask seed and masking private key,
readable by v alone. The key is HKDF-SHA256(X25519(c_u, c_v), salt = sid,
info = "shefl enc") from the two encryption key pairs; the cipher
AES-256-GCM with
    AAD = sid (32) || u (4) || v (4)          ids big-endian
so a box opens only in its session and only as "from u to v": one replayed
from another round, or turned round from v to u (the key is the same both
ways), is refused.

Box bytes: nonce (12, random) || ciphertext || tag (16). The plaintext is
the seed share (28 bytes) then the key share (44 bytes) in
shamir's wire form, so a box is 12 + 72 + 16 = 100 bytes.
Pure functions; thread-safe."""
from __future__ import annotations

import secrets
from dataclasses import dataclass

from .primitives import (GCM_NONCE_BYTES, GCM_TAG_BYTES, DataLoss, InvalidArgument,
                         aes_gcm_open, aes_gcm_seal, be32, hkdf_sha256_key, to_key32,
                         x25519_shared_secret)
from .shamir import ShamirShare, parse_shamir_share, serialize_shamir_share, shamir_share_bytes

ENC_INFO = b"shefl enc"
_SEED_BYTES = 16
_KEY_BYTES = 32
PEER_SHARES_BYTES = 28 + 44
SHARE_BOX_BYTES = GCM_NONCE_BYTES + PEER_SHARES_BYTES + GCM_TAG_BYTES  # 100


@dataclass
class PeerShares:
    """The shares party u gives party v, both at v's point x."""
    self_seed: ShamirShare     # of the 16-byte self-mask seed b_u
    mask_private: ShamirShare  # of the 32-byte masking private key s_u


def pack_peer_shares(shares: PeerShares) -> bytes:
    """The 72-byte plaintext of a box."""
    return serialize_shamir_share(shares.self_seed) + serialize_shamir_share(shares.mask_private)


def unpack_peer_shares(plaintext: bytes) -> PeerShares:
    """Its inverse; refuses a wrong size, a bad share, or two different x."""
    seed_size = shamir_share_bytes(_SEED_BYTES)
    if len(plaintext) != seed_size + shamir_share_bytes(_KEY_BYTES):
        raise InvalidArgument("peer shares: wrong size")
    seed = parse_shamir_share(plaintext[:seed_size], _SEED_BYTES)
    key = parse_shamir_share(plaintext[seed_size:], _KEY_BYTES)
    if seed.x != key.x:
        raise InvalidArgument("peer shares: the two shares differ in x")
    return PeerShares(seed, key)


def share_box_key(own_private: bytes, peer_public: bytes, sid: bytes) -> bytes:
    """The box key of a pair, from one side's encryption private key and the
    other's public key: either side computes the same key."""
    return hkdf_sha256_key(x25519_shared_secret(own_private, peer_public),
                           to_key32(sid, "session id"), ENC_INFO)


def share_box_aad(sid: bytes, from_: int, to: int) -> bytes:
    """sid || from || to: what binds a box to its session and direction."""
    return to_key32(sid, "session id") + be32(from_) + be32(to)


def seal_share_box(plaintext: bytes, sid: bytes, from_: int, to: int,
                   from_private: bytes, to_public: bytes) -> bytes:
    """Seals `plaintext` from party `from_` to party `to` with a fresh random
    nonce; `from_private` is the sender's encryption private key. The key
    serves both directions and every box of the pair, so nonces are random
    (96 bits: no collision among a session's few boxes)."""
    key = share_box_key(from_private, to_public, sid)
    nonce = secrets.token_bytes(GCM_NONCE_BYTES)
    return nonce + aes_gcm_seal(key, nonce, plaintext, share_box_aad(sid, from_, to))


def open_share_box(box: bytes, sid: bytes, from_: int, to: int,
                   to_private: bytes, from_public: bytes) -> bytes:
    """Opens a box that claims to come from `from_` to `to` in session `sid`;
    `to_private` is the receiver's encryption private key. DataLoss when the
    box was changed, or was sealed for another session, direction or pair."""
    if len(box) < GCM_NONCE_BYTES + GCM_TAG_BYTES:
        raise DataLoss("share box: shorter than nonce and tag")
    key = share_box_key(to_private, from_public, sid)
    return aes_gcm_open(key, box[:GCM_NONCE_BYTES], box[GCM_NONCE_BYTES:],
                        share_box_aad(sid, from_, to))
