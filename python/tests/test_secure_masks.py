"""The masks of secure aggregation in Python (shefl_client.secure.masks)
are the C++ ones (common/secure/masks.h): the session id, the pairwise,
self-mask and share-box keys and the first stream words that
tests/secure_masks_test.cc pins; three masked inputs the C++ library made
from fixed keys, unmasked with a party dropped; pairwise masks that cancel
mod 2^32; and the refusal of inconsistent party sets."""
import unittest

import numpy as np

from shefl_client.secure import masks
from shefl_client.secure import primitives as prim
from shefl_client.secure import share_box as sbox
from shefl_client.secure.session_id import encode_session_params, make_session_id

from secure_support import hash_of, hex_words, kat_params, mask_pair


class CppValues(unittest.TestCase):
    """Values pinned by tests/secure_masks_test.cc, and masked inputs the
    C++ library printed for fixed keys (written down here, not
    recomputed): Python must give the same bytes."""

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


if __name__ == "__main__":
    unittest.main()
