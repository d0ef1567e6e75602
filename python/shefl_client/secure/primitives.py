"""The cryptographic primitives of secure aggregation, byte for byte those
of common/secure/ (bytes.h, x25519.h, hkdf.h, sha256.h, aes_ctr.h,
aes_gcm.h), so that a Python daemon and a C++ daemon take part in one
session: the same keys give the same agreements, HKDF keys, mask streams
and boxes. Everything goes through OpenSSL, as the C++ does, by way of
Debian's python3-cryptography.

Errors carry the C++ status code (SecureError.code) and a message like
the C++ one, so that callers and tests tell malformed input
(InvalidArgument), a changed box (DataLoss), a refused request
(PermissionDenied) and a call out of stage (FailedPrecondition) apart as
they do in C++.

Unlike the C++, which wipes keys with OPENSSL_cleanse, Python cannot wipe
its immutable bytes; a daemon's secrets live as long as the objects that
hold them. Pure functions; thread-safe."""
from __future__ import annotations

import hashlib
import secrets
import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

Words = npt.NDArray[np.uint32]  # mask streams, encoded and masked inputs: mod 2^32

KEY_BYTES = 32
AES_CTR_IV_BYTES = 16
GCM_NONCE_BYTES = 12
GCM_TAG_BYTES = 16
_HKDF_MAX_OUTPUT = 255 * 32
_HKDF_MAX_INFO = 1024  # OpenSSL's bound; the C++ refuses longer info too
UINT32_MAX = 0xFFFFFFFF


# ------------------------------------------------------------------ errors

class SecureError(Exception):
    """A refusal of secure aggregation; `code` is the C++ absl status code."""
    code = "UNKNOWN"


class InvalidArgument(SecureError, ValueError):
    """Malformed input: a wrong size, a value out of range, an inconsistent set."""
    code = "INVALID_ARGUMENT"


class FailedPrecondition(SecureError):
    """Called out of stage, or too few shares or parties to go on."""
    code = "FAILED_PRECONDITION"


class PermissionDenied(SecureError):
    """A request that would reveal an input, or a roster that is not this party's."""
    code = "PERMISSION_DENIED"


class DataLoss(SecureError):
    """A box or a share set that was changed, or does not belong to one sharing."""
    code = "DATA_LOSS"


# ------------------------------------------------------------------- bytes

def be32(v: int) -> bytes:
    """4 bytes, most significant first (AppendBe32); refuses what is not a uint32."""
    if not 0 <= v <= UINT32_MAX:
        raise InvalidArgument("%d is not a 32-bit unsigned integer" % v)
    return struct.pack(">I", v)


def be64(v: int) -> bytes:
    """8 bytes, most significant first (AppendBe64); refuses what is not a uint64."""
    if not 0 <= v < 1 << 64:
        raise InvalidArgument("%d is not a 64-bit unsigned integer" % v)
    return struct.pack(">Q", v)


def to_key32(v: bytes, what: str) -> bytes:
    """`v` when it has exactly 32 bytes (ToKey32), else InvalidArgument naming `what`."""
    if len(v) != KEY_BYTES:
        raise InvalidArgument("%s: expected 32 bytes, got %d" % (what, len(v)))
    return bytes(v)


# ------------------------------------------------------------------ X25519

@dataclass(frozen=True)
class X25519KeyPair:
    """Raw 32-byte keys (RFC 7748's little-endian encodings). The private
    key is kept as drawn, unclamped: X25519 clamps it when it is used, so a
    Shamir share of it carries the 32 bytes exactly, as in C++."""
    private_key: bytes
    public_key: bytes


def generate_x25519_key_pair() -> X25519KeyPair:
    """32 bytes from the OS's private generator as the private key."""
    return x25519_key_pair_from_private(secrets.token_bytes(KEY_BYTES))


def x25519_key_pair_from_private(private_key: bytes) -> X25519KeyPair:
    """The pair of a private key: what a coordinator that rebuilt a dropped
    party's key recomputes to check it against the advertised public key."""
    if len(private_key) != KEY_BYTES:
        raise InvalidArgument("X25519 private key: expected 32 bytes")
    pub = X25519PrivateKey.from_private_bytes(bytes(private_key)).public_key()
    return X25519KeyPair(bytes(private_key),
                         pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def x25519_shared_secret(private_key: bytes, peer_public: bytes) -> bytes:
    """X25519(private_key, peer_public). An all-zero result (a peer key of
    small order) would be a secret everyone knows, so it is refused
    (InvalidArgument), as RFC 7748 section 6.1 allows and the C++ does.
    OpenSSL itself fails such a derivation; the check after it holds
    whatever the library version does."""
    if len(private_key) != KEY_BYTES:
        raise InvalidArgument("X25519 private key: expected 32 bytes")
    if len(peer_public) != KEY_BYTES:
        raise InvalidArgument("X25519 public key: expected 32 bytes")
    own = X25519PrivateKey.from_private_bytes(bytes(private_key))
    try:
        secret = own.exchange(X25519PublicKey.from_public_bytes(bytes(peer_public)))
    except ValueError:
        raise InvalidArgument("X25519: the agreement failed: the peer's public key has small "
                              "order (the shared secret would be all zeros)") from None
    if not any(secret):
        raise InvalidArgument("X25519: the shared secret is all zeros (the peer's public key "
                              "has small order)")
    return secret


# -------------------------------------------------------- HKDF and SHA-256

def hkdf_sha256(ikm: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    """HKDF-SHA256 (RFC 5869), extract then expand: `length` bytes, 1 to
    255 * 32. An empty salt stands for 32 zero bytes (the RFC's default,
    given explicitly as the C++ gives it); `ikm` must not be empty; `info`
    holds at most 1024 bytes. The salt is the session id and the info names
    the purpose, so no two purposes or sessions share a key."""
    if not ikm:
        raise InvalidArgument("HKDF: empty input keying material")
    if length <= 0 or length > _HKDF_MAX_OUTPUT:
        raise InvalidArgument("HKDF: length must be 1 to 8160 bytes")
    if len(info) > _HKDF_MAX_INFO:
        raise InvalidArgument("HKDF: info longer than 1024 bytes")
    kdf = HKDF(algorithm=hashes.SHA256(), length=length,
               salt=bytes(salt) if salt else bytes(32), info=bytes(info))
    return kdf.derive(bytes(ikm))


def hkdf_sha256_key(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    """32 bytes of HKDF-SHA256: an AES-256 key."""
    return hkdf_sha256(ikm, salt, info, KEY_BYTES)


def sha256(data: bytes) -> bytes:
    """SHA-256 (FIPS 180-4): the hash of the session id's encoding."""
    return hashlib.sha256(data).digest()


# ------------------------------------------------------------- AES-256-CTR

def aes_ctr_keystream(key: bytes, iv: bytes, n: int) -> bytes:
    """The first `n` bytes of the AES-256-CTR keystream under `key` from the
    counter block `iv`, counting up as one 128-bit big-endian integer
    (NIST SP 800-38A's standard incrementing function, OpenSSL's CTR): the
    encryption of n zero bytes."""
    if len(key) != KEY_BYTES:
        raise InvalidArgument("AES-256-CTR: key must be 32 bytes")
    if len(iv) != AES_CTR_IV_BYTES:
        raise InvalidArgument("AES-256-CTR: IV must be 16 bytes")
    if n < 0:
        raise InvalidArgument("AES-256-CTR: negative length")
    enc = Cipher(algorithms.AES(bytes(key)), modes.CTR(bytes(iv))).encryptor()
    return enc.update(bytes(n)) + enc.finalize()


def aes_ctr_words(key: bytes, n_words: int) -> Words:
    """The mask stream: `n_words` words of the keystream under `key` from
    the all-zero counter block, word i being keystream bytes 4i..4i+3 read
    little-endian. A zero start is safe because every stream has a key of
    its own (per pair or seed, and per session)."""
    ks = aes_ctr_keystream(key, bytes(AES_CTR_IV_BYTES), 4 * n_words)
    return np.frombuffer(ks, dtype="<u4").astype(np.uint32)


# ------------------------------------------------------------- AES-256-GCM

def _check_gcm(key: bytes, nonce: bytes) -> None:
    if len(key) != KEY_BYTES:
        raise InvalidArgument("AES-256-GCM: key must be 32 bytes")
    if len(nonce) != GCM_NONCE_BYTES:
        raise InvalidArgument("AES-256-GCM: nonce must be 12 bytes")


def aes_gcm_seal(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """ciphertext || 16-byte tag, under a 32-byte key and a 12-byte nonce
    that must never repeat under one key; `aad` is authenticated, not sent."""
    _check_gcm(key, nonce)
    return AESGCM(bytes(key)).encrypt(bytes(nonce), bytes(plaintext), bytes(aad))


def aes_gcm_open(key: bytes, nonce: bytes, sealed: bytes, aad: bytes) -> bytes:
    """The plaintext of `sealed` (ciphertext || tag), or DataLoss when the
    tag does not verify: a changed bit of ciphertext, tag, nonce or AAD, a
    wrong key, or fewer than 16 bytes. Nothing of the plaintext comes back."""
    if len(sealed) < GCM_TAG_BYTES:
        raise DataLoss("AES-256-GCM: shorter than its tag")
    _check_gcm(key, nonce)
    try:
        return AESGCM(bytes(key)).decrypt(bytes(nonce), bytes(sealed), bytes(aad))
    except InvalidTag:
        raise DataLoss("AES-256-GCM: authentication failed (ciphertext, tag, nonce, AAD or "
                       "key differ from what was sealed)") from None
