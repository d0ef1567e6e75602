"""The fixed-point encoding of secure aggregation in Python
(shefl_client.secure.fixed_point) is the C++ one
(common/secure/fixed_point.h): a seed gives the words, errors and draws
the C++ library made from std::mt19937_64(42); rounding is unbiased, the
error exact, sums decode through the wrap, and the overflow check and the
encoding refuse what the C++ refuses."""
import unittest

import numpy as np

from shefl_client import rng as R
from shefl_client.secure import fixed_point as fp
from shefl_client.secure import masks
from shefl_client.secure import primitives as prim

from secure_support import hex_words


class CppValues(unittest.TestCase):
    """An encoding the C++ library printed for a seed (written down here,
    not recomputed)."""

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


if __name__ == "__main__":
    unittest.main()
