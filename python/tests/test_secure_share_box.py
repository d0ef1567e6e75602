"""Share boxes in Python (shefl_client.secure.share_box) are the C++ ones
(common/secure/share_box.h): a box the C++ library sealed opens, and the
same nonce seals the same bytes; a box is 100 bytes, opens for its
receiver only and is refused in another session, direction or pair, or
changed."""
import unittest

from shefl_client.secure import primitives as prim
from shefl_client.secure import shamir
from shefl_client.secure import share_box as sbox
from shefl_client.secure.session_id import SessionParams, make_session_id

from secure_support import h, hash_of, kat_params


class CppValues(unittest.TestCase):
    """A box the C++ library sealed for fixed keys (written down here, not
    recomputed): Python must open it and seal the same bytes."""

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


if __name__ == "__main__":
    unittest.main()
