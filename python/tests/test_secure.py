"""Secure aggregation's primitives and party in Python (shefl_client.secure_*)
are the C++ ones (common/secure/): the published vectors of
tests/secure_crypto_test.cc (RFC 7748, RFC 5869, FIPS 180, NIST SP 800-38A
F.5.5, GCM test case 16); the values tests/secure_masks_test.cc pins (the
session id, the pairwise, self-mask and share-box keys, the first stream
words); and values the C++ library computed from fixed keys and seeds
(the session encoding, three masked inputs, a Shamir sharing in its wire
form, a sealed share box, a fixed-point encoding from std::mt19937_64(42)),
which Python must rebuild, open or reconstruct exactly. Then Shamir any t
of n, masks that cancel, share boxes refused in another session or
direction, the fixed-point bounds, and whole sessions of Python parties
with a small collector written here (the C++ SecureCollector's steps): the
exact sum of the survivors with drops at every stage, abandonment below t,
and the parties' refusals."""
import copy
import itertools
import random
import unittest

import numpy as np

from shefl_client import rng as R
from shefl_client import secure_fixed_point as fp
from shefl_client import secure_masks as masks
from shefl_client import secure_primitives as prim
from shefl_client import secure_shamir as shamir
from shefl_client import secure_share_box as sbox
from shefl_client.secure_messages import (KeyAdvert, MaskedInput, Roster, ShareBox, UnmaskReply,
                                          UnmaskRequest)
from shefl_client.secure_party import SecureParty
from shefl_client.secure_session import SessionParams, encode_session_params, make_session_id

P = shamir.P


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


# --------------------------------------------------- published vectors

class KnownAnswers(unittest.TestCase):
    def x25519(self, scalar, u):
        return prim.x25519_shared_secret(h(scalar), h(u)).hex()

    def test_x25519_gives_rfc7748_section_5_2s_outputs(self):
        self.assertEqual(
            self.x25519("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
                        "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c"),
            "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552")
        # The input u has its top bit set, which X25519 must ignore.
        self.assertEqual(
            self.x25519("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
                        "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493"),
            "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957")

    def test_x25519_iterated_1_and_1000_times_gives_rfc7748s_values(self):
        k = u = bytes([9]) + bytes(31)
        for i in range(1, 1001):
            k, u = prim.x25519_shared_secret(k, u), k
            if i == 1:
                self.assertEqual(
                    k.hex(), "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079")
        self.assertEqual(k.hex(),
                         "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51")

    def test_x25519_diffie_hellman_of_rfc7748_section_6_1(self):
        alice = prim.x25519_key_pair_from_private(
            h("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        bob = prim.x25519_key_pair_from_private(
            h("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
        self.assertEqual(alice.public_key.hex(),
                         "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        self.assertEqual(bob.public_key.hex(),
                         "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        ab = prim.x25519_shared_secret(alice.private_key, bob.public_key)
        self.assertEqual(ab.hex(),
                         "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
        self.assertEqual(prim.x25519_shared_secret(bob.private_key, alice.public_key), ab)

    def test_x25519_fresh_pairs_agree_and_differ(self):
        a, b = prim.generate_x25519_key_pair(), prim.generate_x25519_key_pair()
        self.assertNotEqual(a.private_key, b.private_key)
        self.assertNotEqual(a.public_key, b.public_key)
        self.assertEqual(prim.x25519_key_pair_from_private(a.private_key), a)
        self.assertEqual(prim.x25519_shared_secret(a.private_key, b.public_key),
                         prim.x25519_shared_secret(b.private_key, a.public_key))

    def test_x25519_refuses_small_order_peer_keys_and_wrong_sizes(self):
        a = prim.generate_x25519_key_pair()
        for bad in (bytes(32), bytes([1]) + bytes(31)):  # points of small order
            with self.assertRaisesRegex(prim.InvalidArgument, "small order"):
                prim.x25519_shared_secret(a.private_key, bad)
        with self.assertRaises(prim.InvalidArgument):
            prim.x25519_shared_secret(bytes([1]) * 31, a.public_key)
        with self.assertRaises(prim.InvalidArgument):
            prim.x25519_shared_secret(a.private_key, bytes([1]) * 33)
        with self.assertRaises(prim.InvalidArgument):
            prim.x25519_key_pair_from_private(bytes([1]) * 16)

    def test_hkdf_sha256_gives_rfc5869s_test_cases_1_to_3(self):
        self.assertEqual(
            prim.hkdf_sha256(b"\x0b" * 22, h("000102030405060708090a0b0c"),
                             h("f0f1f2f3f4f5f6f7f8f9"), 42).hex(),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf3400"
            "7208d5b887185865")
        self.assertEqual(
            prim.hkdf_sha256(bytes(range(0x00, 0x50)), bytes(range(0x60, 0xb0)),
                             bytes(range(0xb0, 0x100)), 82).hex(),
            "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c5904"
            "5a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c581"
            "79ec3e87c14c01d5c1f3434f1d87")
        self.assertEqual(  # empty salt and info
            prim.hkdf_sha256(b"\x0b" * 22, b"", b"", 42).hex(),
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d20"
            "1395faa4b61a96c8")

    def test_hkdf_sha256_refuses_lengths_beyond_the_bound_and_empty_keys(self):
        self.assertEqual(len(prim.hkdf_sha256(b"\x01" * 32, b"", b"", 255 * 32)), 8160)
        for ikm, length in ((b"\x01" * 32, 255 * 32 + 1), (b"\x01" * 32, 0), (b"", 32)):
            with self.assertRaises(prim.InvalidArgument):
                prim.hkdf_sha256(ikm, b"", b"", length)
        with self.assertRaises(prim.InvalidArgument):
            prim.hkdf_sha256(b"\x01", b"", bytes(1025), 32)
        self.assertEqual(prim.hkdf_sha256_key(b"\x0b" * 22, b"", b"").hex(),
                         "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d")

    def test_sha256_of_abc_is_fips_180s_digest(self):
        self.assertEqual(prim.sha256(b"abc").hex(),
                         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")

    def test_aes_256_ctr_gives_nist_sp800_38a_f55(self):
        key = h("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
        iv = h("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
        plain = h("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                  "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
        ks = prim.aes_ctr_keystream(key, iv, len(plain))
        self.assertEqual(bytes(a ^ b for a, b in zip(plain, ks)).hex(),
                         "601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5"
                         "2b0930daa23de94ce87017ba2d84988ddfc9c58db67aada613c2dd08457941a6")

    def test_mask_words_are_the_zero_iv_keystream_read_little_endian(self):
        key = bytes(range(1, 33))
        ks = prim.aes_ctr_keystream(key, bytes(16), 4 * 1000)
        w = prim.aes_ctr_words(key, 1000)
        self.assertEqual(w.dtype, np.uint32)
        self.assertEqual(w.size, 1000)
        for i in range(0, 1000, 37):
            self.assertEqual(int(w[i]), int.from_bytes(ks[4 * i:4 * i + 4], "little"))
        # A longer stream begins with the shorter one (one counter, no restart).
        self.assertTrue(np.array_equal(prim.aes_ctr_words(key, 3 << 18)[:1000], w))
        with self.assertRaises(prim.InvalidArgument):  # an AES-128 key
            prim.aes_ctr_words(bytes([1]) * 16, 4)

    # McGrew and Viega, "The Galois/Counter Mode of Operation", test case 16.
    GCM_KEY = h("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
    GCM_NONCE = h("cafebabefacedbaddecaf888")
    GCM_PLAIN = h("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                  "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
    GCM_AAD = h("feedfacedeadbeeffeedfacedeadbeefabaddad2")
    GCM_SEALED = h("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                   "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                   "76fc6ece0f4e1768cddf8853bb2d551b")

    def test_aes_256_gcm_seals_and_opens_gcm_test_case_16(self):
        sealed = prim.aes_gcm_seal(self.GCM_KEY, self.GCM_NONCE, self.GCM_PLAIN, self.GCM_AAD)
        self.assertEqual(sealed, self.GCM_SEALED)
        self.assertEqual(prim.aes_gcm_open(self.GCM_KEY, self.GCM_NONCE, sealed, self.GCM_AAD),
                         self.GCM_PLAIN)

    def test_aes_256_gcm_refuses_any_changed_bit(self):
        def refused(key, nonce, box, aad):
            with self.assertRaises(prim.DataLoss):
                prim.aes_gcm_open(key, nonce, box, aad)

        def flip(b, bit):
            out = bytearray(b)
            out[bit // 8] ^= 1 << (bit % 8)
            return bytes(out)
        k, n, s, a = self.GCM_KEY, self.GCM_NONCE, self.GCM_SEALED, self.GCM_AAD
        for bit in range(8 * len(s)):
            refused(k, n, flip(s, bit), a)
        for bit in range(8 * len(a)):
            refused(k, n, s, flip(a, bit))
        for bit in range(0, 8 * len(n), 7):
            refused(k, flip(n, bit), s, a)
        refused(flip(k, 255), n, s, a)
        refused(k, n, s[:-1], a)
        refused(k, n, s[1:], a)
        refused(k, n, bytes(15), a)
        refused(k, n, s, b"")  # AAD dropped


# ---------------------------------------- the C++ library's own values

class CppValues(unittest.TestCase):
    """Values pinned by tests/secure_masks_test.cc, and values the C++
    library printed for fixed keys (written down here, not recomputed):
    Python must give the same bytes, or open and rebuild what C++ made."""

    def test_session_id_mask_keys_and_streams_are_the_cpp_pinned_values(self):
        p = kat_params()
        enc = encode_session_params(p)
        self.assertEqual(len(enc), 12 + 4 + 8 + 8 + 4 + 4 + 3 * 4 + 3 * 4 + 8 + 32 + 32)
        self.assertEqual(enc[:12], b"shefl sid v1")
        sid = make_session_id(p)
        self.assertEqual(sid.hex(),
                         "e03313045cceb88aa5776ed940b7f6676664feef8d021b2522cb04ecd48ca6a1")
        (u, b10), (v, _) = mask_pair(10), mask_pair(20)
        uv = masks.pairwise_mask_key(u.private_key, v.public_key, 10, 20, sid)
        self.assertEqual(masks.pairwise_mask_key(v.private_key, u.public_key, 20, 10, sid), uv)
        self.assertEqual(uv.hex(),
                         "ee9678f48cd64de8859920fc21b85613f273330a609fc311ab1ef92225669bfb")
        self.assertEqual(hex_words(prim.aes_ctr_words(uv, 4)),
                         ["f2c1d77a", "736a2a21", "c409b6d6", "384e480c"])
        self_key = masks.self_mask_key(b10, sid)
        self.assertEqual(self_key.hex(),
                         "1fbfab6379f2ae4fa7179b0881d2fef744d8fd496a2d7b6e30742f8746e2d6fc")
        self.assertEqual(hex_words(prim.aes_ctr_words(self_key, 4)),
                         ["0c1aade5", "86c88561", "366acc01", "b1135830"])
        c10 = prim.x25519_key_pair_from_private(hash_of("c10"))
        c20 = prim.x25519_key_pair_from_private(hash_of("c20"))
        box_key = sbox.share_box_key(c10.private_key, c20.public_key, sid)
        self.assertEqual(box_key.hex(),
                         "b6c40ba17a83d3b78ad4814be5c9bdb3b198bc557d53be88ae20759c43f0cfc7")
        self.assertEqual(sbox.share_box_key(c20.private_key, c10.public_key, sid), box_key)

    def test_the_session_encoding_is_the_cpp_bytes(self):
        self.assertEqual(
            encode_session_params(kat_params()).hex(),
            "736865666c207369642076310000000872756e2d323032340000000000000003000000010000"
            "00030000000a000000140000001e0000000300000002000000183fe0000000000000a1860308"
            "6e5bdf9df88ccc9f5a083fed093e819976e87456b74dafcbd70111149372c470eeadd5ecd9c3"
            "c74c2b3cb633f8e2f2fad799250a0f70d652b6b825e4")

    # MaskInput of parties 10, 20, 30 of kat_params(), q_u[k] = 1000 u + k.
    CPP_Y = {10: "83cb94a7 1db64ff3 6609ace4 6327d805 5bbcf863 8eb3c33f 5e9d95ce 9de02a80",
             20: "884e6150 5dabe627 449e518d b7554b59 4daf60f0 f50c445d c70b26d4 dbe3055a",
             30: "18ec7b2c 25f8af5b a9eac588 ff38cf4f 71f99420 1cee9dde cc7dd336 323f9033"}

    def test_masked_inputs_are_the_cpp_words_and_unmask_with_a_drop(self):
        sid = make_session_id(kat_params())
        keys = {u: mask_pair(u) for u in (10, 20, 30)}
        q = {u: np.array([1000 * u + k for k in range(8)], dtype=np.uint32) for u in keys}
        ys = {}
        for u, (s, b) in keys.items():
            peers = {v: keys[v][0].public_key for v in keys if v != u}
            ys[u] = masks.mask_input(q[u], u, b, s.private_key, peers, sid)
            self.assertEqual(" ".join(hex_words(ys[u])), self.CPP_Y[u])
        # 20 dropped after the shares: 10 and 30 upload, 20's key is rebuilt.
        total = masks.add_masked(masks.add_masked([], ys[10]), ys[30])
        got = masks.unmask(total, {10: keys[10][1], 30: keys[30][1]},
                           {20: keys[20][0].private_key},
                           {10: keys[10][0].public_key, 30: keys[30][0].public_key}, sid)
        self.assertTrue(np.array_equal(got, q[10] + q[30]))
        everyone = masks.add_masked(total, ys[20])
        got = masks.unmask(everyone, {u: keys[u][1] for u in keys}, {}, {}, sid)
        self.assertTrue(np.array_equal(got, q[10] + q[20] + q[30]))

    # ShamirSplit(bytes 1..32, t = 3, n = 5) by the C++ library, wire form.
    CPP_SHARES = [
        "0000000106a4f91c33b4a5800768438fc3c67ee419f3ed30d0ebea031cde55609938c6441cacbe73d24d1f17",
        "000000021001d83af2db018a0f1c40564d914deb14d4e3bf5dea000015716480379736360f5154451e7685f2",
        "000000031c1da3614176161f172a035fa86a761d10b7f7beb90b520509d54878f43366eb17edc174049b52ac",
        "000000040af85a8f1f85e3401f918cabd451f77a0d9d292ee24fe0121a0a014acf0d58621682060084bb8546",
        "000000051c91fdc48d0a68eb0852dc3ad147d2030b84780fd9b7aa27060f8ef5c8250a9d0b0e21ea9ed71dc0"]

    def test_cpp_shares_parse_reconstruct_and_serialise_back(self):
        shares = [shamir.parse_shamir_share(h(s), 32) for s in self.CPP_SHARES]
        self.assertEqual([s.x for s in shares], [1, 2, 3, 4, 5])
        self.assertEqual([shamir.serialize_shamir_share(s).hex() for s in shares],
                         self.CPP_SHARES)
        for idx in itertools.combinations(range(5), 3):
            for order in (idx, idx[::-1]):
                self.assertEqual(shamir.shamir_reconstruct([shares[i] for i in order], 3, 32),
                                 bytes(range(1, 33)))
        self.assertEqual(shamir.shamir_reconstruct(shares, 3, 32), bytes(range(1, 33)))

    def test_a_share_is_the_documented_wire_form(self):
        # x = 4, then the elements 1, p - 1 and 2^56 - 1, big-endian.
        share = shamir.ShamirShare(4, [1, P - 1, (1 << 56) - 1])
        wire = shamir.serialize_shamir_share(share)
        self.assertEqual(wire.hex(), "00000004" "0000000000000001" "1ffffffffffffffe"
                                     "00ffffffffffffff")
        self.assertEqual(shamir.parse_shamir_share(wire, 16), share)  # 16 bytes: 3 chunks
        self.assertEqual(shamir.shamir_share_bytes(16), 28)
        self.assertEqual(shamir.shamir_share_bytes(32), 44)

    # SealShareBox(PackPeerShares(party 10's shares at x = 2 of its seed and
    # masking key, t = 2 of 3), kat sid, 10 -> 20, c10, c20) by C++.
    CPP_PLAIN = ("00000002042a2c8341ae1be90cb903944c0fff0316228be4ae85820f000000020dfc601135de310a"
                 "07697be4128194740733fc0ad82c90780acb3d44478d3f1e14b810a9d163e2f2")
    CPP_BOX = ("789ac8890416e6ca7effccaa1f7a76ed875d30f6fed4964ce4f5e5e9ce0a0b1f0d3f3efb4e934a29"
               "83db6caadbcae111a89b7acb20a753ff657f5e0e918c013f26e328ad2a64019b9ac1bd3051c1b878"
               "5f3bde972d371a5697dd95989e492faeb44d229d")

    def test_a_cpp_share_box_opens_and_python_seals_the_same_bytes(self):
        sid = make_session_id(kat_params())
        c10 = prim.x25519_key_pair_from_private(hash_of("c10"))
        c20 = prim.x25519_key_pair_from_private(hash_of("c20"))
        box = h(self.CPP_BOX)
        self.assertEqual(len(box), sbox.SHARE_BOX_BYTES)
        plain = sbox.open_share_box(box, sid, 10, 20, c20.private_key, c10.public_key)
        self.assertEqual(plain.hex(), self.CPP_PLAIN)
        shares = sbox.unpack_peer_shares(plain)
        self.assertEqual((shares.self_seed.x, shares.mask_private.x), (2, 2))
        self.assertEqual(sbox.pack_peer_shares(shares), plain)
        # The same nonce gives the C++ ciphertext and tag, byte for byte.
        key = sbox.share_box_key(c10.private_key, c20.public_key, sid)
        self.assertEqual(box[:12] + prim.aes_gcm_seal(key, box[:12], plain,
                                                      sbox.share_box_aad(sid, 10, 20)), box)
        # Turned round, or in another round's session: refused.
        with self.assertRaises(prim.DataLoss):
            sbox.open_share_box(box, sid, 20, 10, c20.private_key, c10.public_key)
        other = kat_params()
        other.round = 4
        with self.assertRaises(prim.DataLoss):
            sbox.open_share_box(box, make_session_id(other), 10, 20, c20.private_key,
                                c10.public_key)

    # EncodeFixedPoint(x, clip 1.5, f 20, std::mt19937_64(42)) by C++, with
    # x[i] = float((i - 8) * 0.23) (float bits), q and error (float bits).
    CPP_X = ("bfeb851f bfce147b bfb0a3d7 bf933333 bf6b851f bf30a3d7 beeb851f be6b851f "
             "00000000 3e6b851f 3eeb851f 3f30a3d7 3f6b851f 3f933333 3fb0a3d7 3fce147b")
    CPP_Q = ("ffe80000 ffe80000 ffe9eb85 ffed999a fff147ae fff4f5c3 fff8a3d7 fffc51ec "
             "00000000 0003ae15 00075c29 000b0a3d 000eb852 00126666 0016147b 00180000")
    CPP_ERROR = ("beae147c bde147b0 34000000 b4c00000 33800000 b4e00000 33000000 b4f80000 "
                 "00000000 b5040000 b3000000 34e00000 b3800000 34c00000 b4000000 3de147b0")
    CPP_NEXT_DRAW = 13894429094723042358  # the generator's next word after the encoding

    def test_the_fixed_point_encoding_of_a_seed_is_the_cpp_one(self):
        def bits(text):
            return np.array([int(w, 16) for w in text.split()], dtype=np.uint32)
        x = np.array([(i - 8) * 0.23 for i in range(16)], dtype=np.float32)
        self.assertTrue(np.array_equal(x.view(np.uint32), bits(self.CPP_X)))
        g = R.MT19937_64(42)
        e = fp.encode_fixed_point(x, 1.5, 20, g)
        self.assertEqual(" ".join(hex_words(e.q)), self.CPP_Q)
        self.assertEqual(" ".join(hex_words(e.error.view(np.uint32))), self.CPP_ERROR)
        self.assertEqual(g(), self.CPP_NEXT_DRAW)  # one draw a coordinate, no more


# ------------------------------------------------------------ session id

class SessionIds(unittest.TestCase):
    def test_the_session_id_covers_every_parameter_and_refuses_inconsistent_ones(self):
        base = kat_params()
        sid = make_session_id(base)
        ordered = kat_params()
        ordered.roster = [10, 20, 30]
        self.assertEqual(make_session_id(ordered), sid)  # the roster's order does not matter
        changes = [("run_id", "run-2025"), ("round", 4), ("model", 2), ("roster", [10, 20, 31]),
                   ("t", 3), ("scale_bits", 23), ("clip", 0.25),
                   ("support_hash", b"\x01" + hash_of("support")[1:]),
                   ("model_hash", hash_of("model")[:31] + b"\x80")]
        ids = {sid}
        for name, value in changes:
            p = kat_params()
            setattr(p, name, value)
            ids.add(make_session_id(p))
        p = kat_params()
        p.roster, p.n = [10, 20, 30, 40], 4
        ids.add(make_session_id(p))
        self.assertEqual(len(ids), 11)
        for name, value in [("roster", [10, 10, 20]), ("n", 4), ("t", 0), ("t", 4), ("clip", 0.0),
                            ("clip", float("nan")), ("clip", float("inf")), ("round", -1),
                            ("model", 1 << 32), ("support_hash", bytes(31))]:
            p = kat_params()
            setattr(p, name, value)
            with self.assertRaises(prim.InvalidArgument, msg=name):
                make_session_id(p)


# ----------------------------------------------------------------- Shamir

class Shamir(unittest.TestCase):
    def test_gf61_arithmetic_and_inverses(self):
        rnd = random.Random(61)
        edge = [0, 1, 2, P - 1, P - 2, 1 << 60, (1 << 60) + 1] + [rnd.randrange(P)
                                                                   for _ in range(500)]
        for a, b in zip(edge, reversed(edge)):
            self.assertEqual(shamir.gf61_mul(a, b), a * b % P)
            self.assertEqual(shamir.gf61_sub(a, b), (a + P - b) % P)
            if a:
                self.assertEqual(shamir.gf61_mul(a, shamir.gf61_inverse(a)), 1)

    def test_every_t_subset_reconstructs_for_n_5_t_3_and_n_10_t_7(self):
        rnd = random.Random(5)
        for n, t in ((5, 3), (10, 7)):
            for size in (16, 32):
                secret = bytes(rnd.randrange(256) for _ in range(size))
                shares = shamir.shamir_split(secret, t, n)
                self.assertEqual([s.x for s in shares], list(range(1, n + 1)))
                self.assertTrue(all(len(s.y) == shamir.shamir_chunks(size) for s in shares))
                count = 0
                for idx in itertools.combinations(range(n), t):
                    pick = [shares[i] for i in idx]
                    rnd.shuffle(pick)
                    self.assertEqual(shamir.shamir_reconstruct(pick, t, size), secret)
                    count += 1
                self.assertEqual(count, 10 if n == 5 else 120)
                self.assertEqual(shamir.shamir_reconstruct(shares, t, size), secret)

    def test_random_67_subsets_of_100_shares_reconstruct(self):
        rnd = random.Random(100)
        for size in (16, 32):
            secret = bytes(rnd.randrange(256) for _ in range(size))
            shares = shamir.shamir_split(secret, 67, 100)
            for _ in range(4):
                pick = rnd.sample(shares, 67)
                self.assertEqual(shamir.shamir_reconstruct(pick, 67, size), secret)
            with self.assertRaises(prim.FailedPrecondition):
                shamir.shamir_reconstruct(pick[:66], 67, size)

    def test_high_bytes_come_back_whole_and_t_1_is_the_secret(self):
        for fill in (0x00, 0xff, 0x80):
            secret = bytes([fill]) * 32
            shares = shamir.shamir_split(secret, 3, 5)
            self.assertEqual(shamir.shamir_reconstruct([shares[4], shares[0], shares[2]], 3, 32),
                             secret)
        shares = shamir.shamir_split(b"\x5a" * 16, 1, 4)
        self.assertEqual(shamir.shamir_reconstruct([shares[3]], 1, 16), b"\x5a" * 16)

    def test_t_minus_1_shares_fit_every_secret(self):
        rnd = random.Random(7)
        n, t = 10, 7
        secret = bytes(rnd.randrange(256) for _ in range(32))
        shares = shamir.shamir_split(secret, t, n)
        known = shares[:t - 1]
        completions = []
        for candidate in (bytes(32), b"\xff" * 32, secret, bytes(range(32))):
            chunks = [int.from_bytes(candidate[c * 7:c * 7 + 7], "little") for c in range(5)]
            forged = shamir.ShamirShare(9, [
                shamir.lagrange_at([0] + [k.x for k in known], [chunks[c]] + [k.y[c] for k in known],
                                   9) for c in range(5)])
            self.assertEqual(shamir.shamir_reconstruct(known + [forged], t, 32), candidate)
            completions.append(forged.y)
        self.assertEqual(len({tuple(y) for y in completions}), 4)
        self.assertIn(shares[8].y, completions)  # the true completion is the real share

    def test_reconstruction_refuses_too_few_repeated_zero_and_out_of_field_shares(self):
        s = shamir.shamir_split(b"\x42" * 16, 3, 5)

        def refused(error, shares, size=16, t=3):
            with self.assertRaises(error):
                shamir.shamir_reconstruct(shares, t, size)
        self.assertEqual(shamir.shamir_reconstruct(s[:3], 3, 16), b"\x42" * 16)
        refused(prim.FailedPrecondition, s[:2])
        refused(prim.FailedPrecondition, [])
        refused(prim.InvalidArgument, [s[0], s[1], s[1]])
        refused(prim.InvalidArgument, [s[0], s[1], shamir.ShamirShare(0, s[2].y)])
        refused(prim.InvalidArgument, [s[0], s[1], shamir.ShamirShare(3, [s[2].y[0], P, s[2].y[2]])])
        refused(prim.InvalidArgument, [s[0], s[1], shamir.ShamirShare(3, s[2].y[:2])])
        refused(prim.InvalidArgument, s[:3], size=32)
        refused(prim.InvalidArgument, s, t=0)
        off = shamir.ShamirShare(4, [(s[3].y[0] + 1) % P] + s[3].y[1:])
        refused(prim.DataLoss, s[:3] + [off])
        # x = 3's Lagrange weight at 0 among x = 1, 2, 3 is 1: the 2-byte last
        # chunk moves by exactly 2^40, out of its range.
        changed = shamir.ShamirShare(3, s[2].y[:2] + [(s[2].y[2] + (1 << 40)) % P])
        refused(prim.DataLoss, [s[0], s[1], changed])

    def test_splitting_refuses_t_outside_1_to_n_and_an_empty_secret(self):
        for secret, t, n in ((b"\x01" * 16, 0, 5), (b"\x01" * 16, 6, 5), (b"", 2, 5)):
            with self.assertRaises(prim.InvalidArgument):
                shamir.shamir_split(secret, t, n)
        self.assertEqual(len(shamir.shamir_split(b"\x01" * 16, 5, 5)), 5)

    def test_the_wire_form_parses_back_with_the_cpp_checks(self):
        s = shamir.shamir_split(b"\xa5" * 32, 3, 5)[3]
        wire = shamir.serialize_shamir_share(s)
        self.assertEqual(len(wire), 44)
        self.assertEqual(int.from_bytes(wire[:4], "big"), 4)
        self.assertEqual(int.from_bytes(wire[4:12], "big"), s.y[0])
        self.assertEqual(shamir.parse_shamir_share(wire, 32), s)
        at_p = wire[:4] + P.to_bytes(8, "big") + wire[12:]
        for bad, size in ((wire, 16), (wire[:43], 32), (b"", 32), (b"\0\0\0\0" + wire[4:], 32),
                          (wire[:4] + b"\xff" * 8 + wire[12:], 32), (at_p, 32)):
            with self.assertRaises(prim.InvalidArgument):
                shamir.parse_shamir_share(bad, size)
        self.assertEqual(shamir.parse_shamir_share(wire[:4] + (P - 1).to_bytes(8, "big")
                                                   + wire[12:], 32).y[0], P - 1)

    def test_lagrange_interpolation_refuses_repeated_points_and_values_beyond_p(self):
        self.assertEqual(shamir.lagrange_at([1, 2], [5, 7], 3), 9)  # the line 2x + 3
        self.assertEqual(shamir.lagrange_at([1, 2], [5, 7], 0), 3)
        for xs, ys in (([1, 1], [5, 7]), ([1, 2], [5]), ([], []), ([1, P], [5, 7])):
            with self.assertRaises(prim.InvalidArgument):
                shamir.lagrange_at(xs, ys, 0)


# ------------------------------------------------------------------ masks

def mask_all(parties, q, sid):
    ys = []
    for u, (s, b) in parties.items():
        peers = {v: parties[v][0].public_key for v in parties if v != u}
        ys.append(masks.mask_input(q[u], u, b, s.private_key, peers, sid))
    return ys


class Masks(unittest.TestCase):
    def test_pairwise_masks_cancel_mod_2_32_for_n_2_3_and_20(self):
        gen = np.random.default_rng(32)
        for n in (2, 3, 20):
            parties = {1000 - 7 * i: mask_pair(1000 - 7 * i) for i in range(n)}  # out of order
            p = kat_params()
            p.roster, p.n, p.t = list(parties), n, n
            sid = make_session_id(p)
            for zero in (True, False):
                q = {u: (np.zeros(257, dtype=np.uint32) if zero else
                         gen.integers(0, 1 << 32, 257, dtype=np.uint64).astype(np.uint32))
                     for u in parties}
                ys = mask_all(parties, q, sid)
                total = np.zeros(0, dtype=np.uint32)
                for u, y in zip(parties, ys):
                    self.assertFalse(np.array_equal(y, q[u]))  # each upload is masked
                    total = masks.add_masked(total, y)
                got = masks.unmask(total, {u: parties[u][1] for u in parties}, {}, {}, sid)
                want = np.zeros(257, dtype=np.uint32)
                for u in parties:
                    want += q[u]
                self.assertTrue(np.array_equal(got, want), "n = %d" % n)

    def test_masking_and_unmasking_refuse_inconsistent_party_sets(self):
        sid = make_session_id(kat_params())
        (u, ub), (v, vb) = mask_pair(10), mask_pair(20)
        q = np.ones(8, dtype=np.uint32)
        with self.assertRaises(prim.InvalidArgument):
            masks.mask_input(q, 10, ub, u.private_key, {10: u.public_key, 20: v.public_key}, sid)
        with self.assertRaises(prim.InvalidArgument):
            masks.pairwise_mask_key(u.private_key, v.public_key, 10, 10, sid)
        with self.assertRaises(prim.InvalidArgument):
            masks.unmask(q, {10: ub}, {10: u.private_key}, {10: u.public_key}, sid)
        with self.assertRaises(prim.InvalidArgument):
            masks.unmask(q, {10: ub}, {20: v.private_key}, {30: u.public_key}, sid)
        with self.assertRaises(prim.InvalidArgument):
            masks.add_masked(q, np.zeros(7, dtype=np.uint32))
        with self.assertRaises(prim.InvalidArgument):
            masks.mask_input([-1, 2], 10, ub, u.private_key, {20: v.public_key}, sid)
        with self.assertRaises(prim.InvalidArgument):
            masks.self_mask_key(ub[:15], sid)


# ------------------------------------------------------------- share boxes

class ShareBoxes(unittest.TestCase):
    def setUp(self):
        self.u, self.v, self.w = (prim.generate_x25519_key_pair() for _ in range(3))
        self.sid = self.sid_of(1)
        b = shamir.shamir_split(bytes(range(1, 17)), 2, 3)
        s = shamir.shamir_split(bytes(range(50, 82)), 2, 3)
        self.plain = sbox.pack_peer_shares(sbox.PeerShares(b[1], s[1]))

    @staticmethod
    def sid_of(round_):
        return make_session_id(SessionParams(run_id="box-test", round=round_, roster=[7, 9, 11],
                                             n=3, t=2, scale_bits=24, clip=1.0))

    def test_a_share_box_is_100_bytes_and_opens_for_its_receiver_only(self):
        self.assertEqual(len(self.plain), sbox.PEER_SHARES_BYTES)
        box = sbox.seal_share_box(self.plain, self.sid, 7, 9, self.u.private_key, self.v.public_key)
        self.assertEqual(len(box), 100)
        self.assertEqual(sbox.open_share_box(box, self.sid, 7, 9, self.v.private_key,
                                             self.u.public_key), self.plain)
        with self.assertRaises(prim.DataLoss):  # a third party's keys
            sbox.open_share_box(box, self.sid, 7, 9, self.w.private_key, self.u.public_key)
        self.assertNotEqual(sbox.seal_share_box(self.plain, self.sid, 7, 9, self.u.private_key,
                                                self.v.public_key), box)  # random nonces

    def test_a_share_box_is_refused_in_another_session_direction_or_pair_or_changed(self):
        box = sbox.seal_share_box(self.plain, self.sid, 7, 9, self.u.private_key, self.v.public_key)

        def opens(b, sid, from_, to):
            try:
                sbox.open_share_box(b, sid, from_, to, self.v.private_key, self.u.public_key)
                return True
            except prim.DataLoss:
                return False
        self.assertTrue(opens(box, self.sid, 7, 9))
        self.assertFalse(opens(box, self.sid_of(2), 7, 9))
        self.assertFalse(opens(box, self.sid, 9, 7))
        self.assertFalse(opens(box, self.sid, 7, 11))
        self.assertFalse(opens(box, self.sid, 11, 9))
        for i in (0, 5, 11, 12, 50, 83, 84, 99):  # nonce, text, tag
            bad = bytearray(box)
            bad[i] ^= 1
            self.assertFalse(opens(bytes(bad), self.sid, 7, 9), i)
        self.assertFalse(opens(box[:27], self.sid, 7, 9))
        back = sbox.seal_share_box(self.plain, self.sid, 9, 7, self.v.private_key, self.u.public_key)
        self.assertTrue(opens(back, self.sid, 9, 7))
        self.assertFalse(opens(back, self.sid, 7, 9))

    def test_packed_peer_shares_refuse_a_wrong_size_and_mismatched_points(self):
        with self.assertRaises(prim.InvalidArgument):
            sbox.unpack_peer_shares(self.plain[:-1])
        shares = sbox.unpack_peer_shares(self.plain)
        shares.mask_private.x += 1
        with self.assertRaises(prim.InvalidArgument):
            sbox.unpack_peer_shares(sbox.pack_peer_shares(shares))


# ------------------------------------------------------------ fixed point

class FixedPoint(unittest.TestCase):
    def test_stochastic_rounding_is_unbiased(self):
        n = 40000
        for value, low, high in ((0.1, 25, 26), (-0.1, -26, -25)):
            e = fp.encode_fixed_point(np.full(n, value, dtype=np.float32), 1.0, 8,
                                      R.MT19937_64(8))
            q = e.q.view(np.int32)
            self.assertTrue(np.isin(q, [low, high]).all())
            sd = np.sqrt(0.24) / 256 / np.sqrt(n)
            self.assertLess(abs(float(e.error.astype(np.float64).mean())), 5 * sd)
            ups = float(np.mean(q == (26 if value > 0 else -26)))
            self.assertLess(abs(ups - 0.6), 5 * np.sqrt(0.24 / n))

    def test_the_error_is_exact_and_a_seed_gives_one_encoding(self):
        x = np.random.default_rng(1).uniform(-2, 2, 1000).astype(np.float32)
        a = fp.encode_fixed_point(x, 1.5, 20, R.MT19937_64(42))
        b = fp.encode_fixed_point(x, 1.5, 20, R.MT19937_64(42))
        c = fp.encode_fixed_point(x, 1.5, 20, R.MT19937_64(43))
        self.assertTrue(np.array_equal(a.q, b.q))
        self.assertFalse(np.array_equal(a.q, c.q))
        self.assertEqual(fp.encode_fixed_point(x, 1.5, 20, np.random.default_rng(3)).q.size, 1000)
        d = fp.decode_fixed_point(a.q, 20)
        self.assertLess(float(np.abs(d + a.error - x).max()), 1e-6)
        inside = np.abs(x) <= 1.5
        self.assertLess(float(np.abs(a.error[inside]).max()), 2.0 ** -20)
        self.assertTrue((np.abs(d[~inside]) <= 1.5).all())  # clipped: the error holds the excess
        self.assertTrue((np.abs(a.error[~inside]) >= np.abs(x[~inside]) - 1.5 - 1e-6).all())

    def test_sums_of_negative_and_maximal_values_decode_through_the_wrap(self):
        g = R.MT19937_64(5)
        parties = [[-0.5, -1.0, 0.25, -0.75], [-0.5, -1.0, -0.25, 1.0],
                   [-0.5, -1.0, -0.25, -0.125], [-0.5, -1.0, -0.25, 0.0],
                   [-0.5, -1.0, 0.75, -1.0]]
        total = np.zeros(0, dtype=np.uint32)
        for x in parties:
            e = fp.encode_fixed_point(x, 1.0, 24, g)
            self.assertTrue((e.error == 0).all())
            total = masks.add_masked(total, e.q)
        self.assertEqual(fp.decode_fixed_point(total, 24).tolist(), [-2.5, -5.0, 0.25, -0.875])
        fp.check_fixed_point_config(127, 1.0, 24)
        for edge in (1.0, -1.0, 5.0):  # 5 is clipped to 1
            total = np.zeros(0, dtype=np.uint32)
            for _ in range(127):
                total = masks.add_masked(total, fp.encode_fixed_point([edge], 1.0, 24, g).q)
            self.assertEqual(float(fp.decode_fixed_point(total, 24)[0]), 127.0 * min(edge, 1.0))

    def test_the_overflow_check_refuses_n_c_2_f_at_2_31_and_names_the_keys(self):
        fp.check_fixed_point_config(127, 1.0, 24)
        fp.check_fixed_point_config(100, 1.0, 24)
        fp.check_fixed_point_config(1000, 0.5, 20)
        fp.check_fixed_point_config(1, 2147483647.0, 0)
        with self.assertRaisesRegex(prim.InvalidArgument, "secure.scale_bits.*secure.clip"):
            fp.check_fixed_point_config(128, 1.0, 24)  # exactly 2^31
        for n, c, f, names in ((1000, 0.5, 24, "secure.clip"), (1, 2147483647.5, 0, "secure.clip"),
                               (0, 1.0, 24, "no parties"), (10, 1.0, 31, "secure.scale_bits"),
                               (10, -1.0, 24, "secure.clip"), (10, float("nan"), 24, "secure.clip"),
                               (10, float("inf"), 24, "secure.clip")):
            with self.assertRaisesRegex(prim.InvalidArgument, names):
                fp.check_fixed_point_config(n, c, f)

    def test_encoding_refuses_values_that_are_not_finite_and_scales_it_cannot_hold(self):
        g = R.MT19937_64(0)
        with self.assertRaisesRegex(prim.InvalidArgument, "coordinate 1"):
            fp.encode_fixed_point([1.0, float("nan")], 1.0, 24, g)
        with self.assertRaises(prim.InvalidArgument):
            fp.encode_fixed_point([float("inf")], 1.0, 24, g)
        with self.assertRaises(prim.InvalidArgument):
            fp.encode_fixed_point([0.5], 256.0, 24, g)
        fp.encode_fixed_point([0.5], 127.0, 24, g)
        with self.assertRaises(prim.InvalidArgument):
            fp.decode_fixed_point([1], -1)
        # The draws before a refused coordinate are taken, as in C++.
        g1, g2 = R.MT19937_64(9), R.MT19937_64(9)
        with self.assertRaises(prim.InvalidArgument):
            fp.encode_fixed_point([0.1, 0.2, float("nan")], 1.0, 8, g1)
        g2(), g2()
        self.assertEqual(g1(), g2())


# ------------------------------------------------- whole sessions in Python

class Collector:
    """The C++ SecureCollector's steps (common/secure/collector.cc), enough
    to drive Python parties: roster, box routing, masked sum, survivors,
    reconstruction from the first t replies, the dropped keys checked
    against their adverts, unmasking. Raises FailedPrecondition where the
    C++ abandons the session."""

    def __init__(self, words, threshold=0, min_parties=5):
        self.params = SessionParams(run_id="test-run", round=4, model=1, scale_bits=24, clip=1.0)
        self.words, self.threshold, self.min_parties = words, threshold, min_parties
        self.adverts, self.boxes, self.weights, self.replies = {}, {}, {}, {}
        self.sum = np.zeros(0, dtype=np.uint32)

    def add_advert(self, a):
        self.adverts[a.party] = a

    def close_adverts(self):
        n = len(self.adverts)
        if n < self.min_parties:
            raise prim.FailedPrecondition("fewer than secure.min_parties = %d" % self.min_parties)
        p = self.params
        p.roster, p.n = sorted(self.adverts), n
        p.t = self.threshold or 2 * n // 3 + 1
        self.sid = make_session_id(p)
        return Roster(p, [self.adverts[i] for i in p.roster])

    def add_boxes(self, from_, boxes):
        assert sorted(b.to for b in boxes) == [i for i in sorted(self.adverts) if i != from_]
        assert all(b.from_ == from_ for b in boxes)
        self.boxes[from_] = boxes

    def close_shares(self):
        if len(self.boxes) < self.params.t:
            raise prim.FailedPrecondition("abandoned after the shares")
        return sorted(self.boxes)

    def boxes_for(self, party):
        return [b for f in sorted(self.boxes) for b in self.boxes[f] if b.to == party]

    def add_input(self, m):
        assert m.party in self.boxes and m.party not in self.weights and m.y.size == self.words
        self.sum = masks.add_masked(self.sum, m.y)
        self.weights[m.party] = m.weight

    def close_inputs(self):
        if len(self.weights) < self.params.t:
            raise prim.FailedPrecondition("abandoned after the inputs")
        self.request = UnmaskRequest(sorted(self.weights),
                                     [i for i in sorted(self.boxes) if i not in self.weights])
        return self.request

    def add_reply(self, r):
        assert sorted(r.seed_shares) == self.request.survivors
        assert sorted(r.key_shares) == self.request.dropped
        self.replies[r.party] = r

    def finish(self):
        t = self.params.t
        if len(self.replies) < t:
            raise prim.FailedPrecondition("%d unmasking replies, t = %d needed"
                                          % (len(self.replies), t))
        replies = [self.replies[p] for p in sorted(self.replies)]
        seeds = {v: shamir.shamir_reconstruct([r.seed_shares[v] for r in replies], t, 16)
                 for v in self.request.survivors}
        dropped = {}
        for d in self.request.dropped:
            key = shamir.shamir_reconstruct([r.key_shares[d] for r in replies], t, 32)
            if prim.x25519_key_pair_from_private(key).public_key != self.adverts[d].mask_public:
                raise prim.DataLoss("the shares of party %d's key do not give its key" % d)
            dropped[d] = key
        public = {v: self.adverts[v].mask_public for v in self.request.survivors}
        total = masks.unmask(self.sum, seeds, dropped, public, self.sid)
        return total, sum(self.weights.values()), self.request.survivors, self.request.dropped


KEYS, SHARES, INPUT, REPLY = 1, 2, 3, 4
WORDS = 300


class Session:
    def __init__(self, n, threshold=0):
        gen = np.random.default_rng(n * 7919 + threshold)
        self.parties = [SecureParty.create(100 + 3 * i) for i in range(n)]  # ids need not be 0..n-1
        self.q = {p.id: gen.integers(0, 1 << 32, WORDS, dtype=np.uint64).astype(np.uint32)
                  for p in self.parties}
        self.collector = Collector(WORDS, threshold)

    def run(self, drop=None):
        """Runs the session; parties in `drop` vanish before the stage named."""
        drop = drop or {}
        c = self.collector

        def here(p, stage):
            return drop.get(p.id, 99) > stage
        for p in self.parties:
            if here(p, KEYS):
                c.add_advert(p.advert())
        roster = c.close_adverts()
        for p in self.parties:
            if here(p, SHARES):
                c.add_boxes(p.id, p.share_boxes(roster))
        c.close_shares()
        for p in self.parties:
            if here(p, INPUT):
                p.take_boxes(c.boxes_for(p.id))
                c.add_input(p.mask(self.q[p.id], 1.5))
        request = c.close_inputs()
        for p in self.parties:
            if here(p, REPLY):
                c.add_reply(p.unmask(request))
        return c.finish()

    def plain_sum(self, who):
        total = np.zeros(WORDS, dtype=np.uint32)
        for i in who:
            total += self.q[i]
        return total


def drop_three(stage):
    return {100: stage, 115: stage, 127: stage}


class Sessions(unittest.TestCase):
    def test_with_nobody_dropped_the_collector_gets_exactly_the_sum(self):
        s = Session(10)
        total, weight, survivors, dropped = s.run()
        self.assertEqual(s.collector.params.t, 7)
        self.assertEqual((len(survivors), dropped, weight), (10, [], 15.0))
        self.assertTrue(np.array_equal(total, s.plain_sum(survivors)))

    def test_30_percent_dropped_at_any_stage_gives_the_survivors_exact_sum(self):
        for stage in (KEYS, SHARES, INPUT, REPLY):
            with self.subTest(stage=stage):
                s = Session(10)
                total, _, survivors, dropped = s.run(drop_three(stage))
                want = [p.id for p in s.parties
                        if stage == REPLY or p.id not in drop_three(stage)]
                self.assertEqual(survivors, want)
                self.assertTrue(np.array_equal(total, s.plain_sum(want)))
                # Only those that sent shares and then no input need their key rebuilt.
                self.assertEqual(dropped, [100, 115, 127] if stage == INPUT else [])

    def test_one_more_dropped_abandons_the_session(self):
        for stage in (SHARES, INPUT, REPLY):
            with self.subTest(stage=stage):
                drop = drop_three(stage)
                drop[103] = stage
                with self.assertRaises(prim.FailedPrecondition):
                    Session(10).run(drop)
        with self.assertRaisesRegex(prim.FailedPrecondition, "secure.min_parties"):
            Session(4).run()

    def setup_six(self):
        s = Session(6)
        c = s.collector
        for p in s.parties:
            c.add_advert(p.advert())
        roster = c.close_adverts()
        self.assertEqual(roster.params.t, 5)
        for p in s.parties:
            c.add_boxes(p.id, p.share_boxes(roster))
        c.close_shares()
        return s, roster

    def test_a_party_refuses_a_minority_t_and_to_mask_with_fewer_than_t_sharers(self):
        s, roster = self.setup_six()
        fresh = SecureParty.create(100)
        # t = 3 of 6 is not a majority: two halves could give up one party's
        # seed and key; the party refuses the roster before sharing anything.
        low = copy.deepcopy(roster)
        low.params.t = 3
        low.keys[0] = fresh.advert()
        with self.assertRaisesRegex(prim.PermissionDenied, "t = 3 of n = 6"):
            fresh.share_boxes(low)
        # Only three of the five peers' boxes reach party 100: with itself,
        # 4 sharers, fewer than t = 5, so it will not mask.
        p = s.parties[0]
        p.take_boxes(s.collector.boxes_for(p.id)[:3])
        with self.assertRaisesRegex(prim.FailedPrecondition, "4 parties shared .* fewer than t = 5"):
            p.mask(s.q[p.id], 1.0)
        p.take_boxes(s.collector.boxes_for(p.id))  # all five: it masks
        self.assertEqual(p.mask(s.q[p.id], 1.0).party, 100)

    def test_a_party_refuses_a_request_that_would_reveal_an_input(self):
        s, _ = self.setup_six()
        p = s.parties[0]
        with self.assertRaises(prim.FailedPrecondition):  # no input sent yet
            p.unmask(UnmaskRequest([100, 103, 106, 109, 112], [115]))
        for q in s.parties:
            q.take_boxes(s.collector.boxes_for(q.id))
            s.collector.add_input(q.mask(s.q[q.id], 1.0))
        all_ids = [100, 103, 106, 109, 112, 115]
        with self.assertRaisesRegex(prim.PermissionDenied, "both the seed and the key of party 103"):
            p.unmask(UnmaskRequest(all_ids, [103]))
        with self.assertRaisesRegex(prim.PermissionDenied, "fewer than t = 5"):
            p.unmask(UnmaskRequest([100, 103, 106, 109], [112, 115]))
        with self.assertRaises(prim.InvalidArgument):
            p.unmask(UnmaskRequest([100, 100, 103, 106, 109, 112], [115]))
        with self.assertRaises(prim.InvalidArgument):  # not a survivor itself
            p.unmask(UnmaskRequest([103, 106, 109, 112, 115], [100]))
        with self.assertRaises(prim.InvalidArgument):  # 118 gave it no shares
            p.unmask(UnmaskRequest([100, 103, 106, 109, 112], [118]))
        first = p.unmask(UnmaskRequest([100, 103, 106, 109, 112], [115]))
        self.assertEqual(sorted(first.key_shares), [115])
        self.assertEqual(sorted(first.seed_shares), [100, 103, 106, 109, 112])
        self.assertTrue(all(v.x == 1 for v in first.seed_shares.values()))  # its point: 1
        again = p.unmask(UnmaskRequest([100, 103, 106, 109, 112], [115]))  # a retry
        self.assertEqual(again, first)
        with self.assertRaisesRegex(prim.PermissionDenied, "answered already"):
            p.unmask(UnmaskRequest([100, 103, 106, 109, 115], [112]))

    def test_boxes_tampered_with_or_from_another_session_are_refused(self):
        a, ra = self.setup_six()
        to0 = a.collector.boxes_for(100)
        self.assertEqual(len(to0), 5)
        p0 = a.parties[0]
        tampered = list(to0)
        bad = bytearray(to0[1].box)
        bad[20] ^= 0x10
        tampered[1] = ShareBox(to0[1].from_, to0[1].to, bytes(bad))
        with self.assertRaises(prim.DataLoss):
            p0.take_boxes(tampered)
        relabelled = list(to0)
        relabelled[0], relabelled[1] = (ShareBox(to0[1].from_, 100, to0[0].box),
                                        ShareBox(to0[0].from_, 100, to0[1].box))
        with self.assertRaises(prim.DataLoss):
            p0.take_boxes(relabelled)
        with self.assertRaises(prim.InvalidArgument):  # two boxes from one party
            p0.take_boxes([to0[0], to0[0]])
        with self.assertRaises(prim.InvalidArgument):  # addressed to another
            p0.take_boxes([a.collector.boxes_for(103)[0]])
        p0.take_boxes(to0)
        # A roster that changes a party's keys is refused by that party.
        b = Session(6)
        for q in b.parties:
            b.collector.add_advert(q.advert())
        rb = b.collector.close_adverts()
        forged = Roster(rb.params, list(rb.keys))
        k = forged.keys[2]
        forged.keys[2] = KeyAdvert(k.party, k.enc_public, bytes([k.mask_public[0] ^ 1])
                                   + k.mask_public[1:])
        with self.assertRaises(prim.PermissionDenied):
            b.parties[2].share_boxes(forged)
        unsorted = Roster(rb.params, rb.keys[::-1])
        with self.assertRaises(prim.InvalidArgument):
            b.parties[2].share_boxes(unsorted)
        with self.assertRaises(prim.InvalidArgument):  # not in the roster
            SecureParty.create(999).share_boxes(rb)
        b.parties[2].share_boxes(rb)
        with self.assertRaisesRegex(prim.FailedPrecondition, "a second roster"):
            b.parties[2].share_boxes(rb)
        # A box replayed from another session: its keys and id are not this one's.
        b.parties[0].share_boxes(rb)
        replayed = [x for x in to0 if x.from_ == 106]
        with self.assertRaises(prim.DataLoss):
            b.parties[0].take_boxes(replayed)

    def test_stages_out_of_order_are_refused(self):
        p = SecureParty.create(100)
        with self.assertRaises(prim.FailedPrecondition):
            p.take_boxes([])
        with self.assertRaises(prim.FailedPrecondition):
            p.mask([1, 2, 3], 1.0)
        s, _ = self.setup_six()
        q = s.parties[1]
        q.take_boxes(s.collector.boxes_for(q.id))
        self.assertIsInstance(q.mask(s.q[q.id], 1.0), MaskedInput)
        with self.assertRaises(prim.FailedPrecondition):
            q.mask(s.q[q.id], 1.0)
        with self.assertRaises(prim.FailedPrecondition):
            q.take_boxes(s.collector.boxes_for(q.id))

    def test_pinned_secrets_make_a_party_derive_the_cpp_keys(self):
        # A party built from secure_masks_test.cc's keys of party 10 masks as
        # MaskInput does: no boxes taken, so its upload carries the self mask
        # alone, whose first words the C++ test pins.
        s10, b10 = mask_pair(10)
        p = SecureParty.from_secrets(10, hash_of("c10"), hash_of("s10"), b10)
        self.assertEqual(p.advert().mask_public, s10.public_key)
        roster = Roster(kat_params(), [])
        keys = {10: p.advert()}
        for other in (20, 30):
            keys[other] = KeyAdvert(other, prim.x25519_key_pair_from_private(
                hash_of("c%d" % other)).public_key, mask_pair(other)[0].public_key)
        roster.params.roster = [10, 20, 30]
        roster.keys = [keys[i] for i in (10, 20, 30)]
        boxes = p.share_boxes(roster)
        self.assertEqual([(b.from_, b.to, len(b.box)) for b in boxes], [(10, 20, 100), (10, 30, 100)])
        self.assertEqual(p.session_id.hex(),
                         "e03313045cceb88aa5776ed940b7f6676664feef8d021b2522cb04ecd48ca6a1")
        c20 = prim.x25519_key_pair_from_private(hash_of("c20"))
        plain = sbox.open_share_box(boxes[0].box, p.session_id, 10, 20, c20.private_key,
                                    keys[10].enc_public)
        self.assertEqual(sbox.unpack_peer_shares(plain).self_seed.x, 2)  # 20's point
        # No boxes taken: fewer than t sharers, so the party will not mask;
        # the self mask alone, as MaskInput makes it, keeps the pinned words.
        p.take_boxes([])
        with self.assertRaises(prim.FailedPrecondition):
            p.mask(np.zeros(4, dtype=np.uint32), 1.0)
        y = masks.mask_input(np.zeros(4, dtype=np.uint32), 10, b10, hash_of("s10"), {},
                             p.session_id)
        self.assertEqual(hex_words(y), ["0c1aade5", "86c88561", "366acc01", "b1135830"])

    def test_masked_and_plain_fixed_point_sums_decode_to_the_same_floats(self):
        s = Session(7)
        g = R.MT19937_64(5)
        values = np.random.default_rng(5)
        for pid in s.q:
            s.q[pid] = fp.encode_fixed_point(values.normal(0, 0.3, WORDS).astype(np.float32),
                                             1.0, 24, g).q
        total, _, survivors, _ = s.run({106: INPUT})
        self.assertNotIn(106, survivors)
        self.assertTrue(np.array_equal(fp.decode_fixed_point(total, 24),
                                       fp.decode_fixed_point(s.plain_sum(survivors), 24)))


if __name__ == "__main__":
    unittest.main()
