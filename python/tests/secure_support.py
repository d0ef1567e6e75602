"""What the secure-aggregation tests (test_secure_*.py) share: hex and
hashes, and the session and parties whose values tests/secure_masks_test.cc
pins."""
from shefl_client.secure import primitives as prim
from shefl_client.secure.session_id import SessionParams


def h(s):
    return bytes.fromhex(s)


def hash_of(s):
    return prim.sha256(s.encode())


def kat_params():
    """tests/secure_masks_test.cc's KatParams: the pinned values' session."""
    return SessionParams(run_id="run-2024", round=3, model=1, roster=[30, 10, 20], n=3, t=2,
                         scale_bits=24, clip=0.5, support_hash=hash_of("support"),
                         model_hash=hash_of("model"))


def mask_pair(party):
    """MakeParty of tests/secure_masks_test.cc: s = SHA-256("s<id>"),
    b = the first 16 bytes of SHA-256("b<id>")."""
    return (prim.x25519_key_pair_from_private(hash_of("s%d" % party)),
            hash_of("b%d" % party)[:16])


def hex_words(w):
    return ["%08x" % v for v in w]
