"""Shamir sharing in Python (shefl_client.secure.shamir) is the C++ one
(common/secure/shamir.h, shamir_share.h, gf61.h): shares the C++ library
split parse, reconstruct and serialise back to its bytes; any t of n
shares give the secret and t - 1 tell nothing; the wire form and the
reconstruction refuse what the C++ refuses."""
import itertools
import random
import unittest

from shefl_client.secure import primitives as prim
from shefl_client.secure import shamir

from secure_support import h

P = shamir.P


class CppValues(unittest.TestCase):
    """A sharing the C++ library printed (written down here, not
    recomputed), and the documented wire form."""

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


if __name__ == "__main__":
    unittest.main()
