"""The cryptographic primitives of secure aggregation in Python
(shefl_client.secure.primitives) are the C++ ones (common/secure/): the
published vectors of tests/secure_crypto_test.cc (RFC 7748, RFC 5869,
FIPS 180, NIST SP 800-38A F.5.5, GCM test case 16), and the C++ refusals
of small-order keys, wrong sizes, HKDF lengths beyond the bound and any
changed bit of a sealed box."""
import unittest

import numpy as np

from shefl_client.secure import primitives as prim

from secure_support import h


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


if __name__ == "__main__":
    unittest.main()
