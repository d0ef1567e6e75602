"""Distributed differential privacy at a Python party
(shefl_client.secure.party_noise, the L2 clip of secure_input): the noise
key, the uniform stream and the Skellam draws are the C++ party's bit for
bit (the vectors tests/party_noise_test.cc pins too); Poisson draws have
Poisson's mean and variance; the noise is added mod 2^32 to the K value
words only, keyed by (seed, round, model, party), and bad variances are
refused; a client's words stay within its L2 clip and its residual keeps
the rest; a party's own noise floor refuses as the C++ party's does.
Then whole runs: a distributed-DP run with the Python party in
it gives the C++-only run's models bit for bit, and the noise moved them."""
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import unittest

import numpy as np

from shefl_client.secure.party_noise import (UniformStream, add_party_noise, check_noise_floor,
                                              log_poisson_pmf, party_noise_key, sample_poisson,
                                              sample_skellam)
from shefl_client.secure.primitives import FailedPrecondition, InvalidArgument
from shefl_client.secure.secure_input import SecureEncoding, add_client_input

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mixed_run import REFERENCE, jsonl, shefl_run  # noqa: E402
from test_secure_run import CONFIG, MIN_PARTIES, python_flags  # noqa: E402


class Draws(unittest.TestCase):
    def test_the_stream_and_draws_are_the_cpp_partys(self):
        key = party_noise_key(9, 3, 1, 4)
        self.assertEqual(key.hex(),
                         "6c317bec38af09e5ec0d0c0d4697400d5af8a46d82e3c1d213f19b39a0107705")
        u = UniformStream(key)
        self.assertEqual([u.next() for _ in range(3)],
                         [0.9823439218105547, 0.7390087355045063, 0.17812067974477774])
        for mu, want, drawn in ((7.0, [3, 5, -2, 0, 1, 0], 51),
                                (40.0, [-13, -17, 14, -3, 8, 0], 38),
                                (1e14, [1373341, -20077807, -26799254, 21954884, 6700278,
                                        -3319392], 30)):
            u = UniformStream(key)
            self.assertEqual([sample_skellam(mu, u) for _ in range(6)], want, mu)
            self.assertEqual(u.drawn, drawn, mu)

    def test_poisson_draws_have_poissons_mean_and_variance(self):
        n = 5000
        for lam in (3.5, 20.0, 5e13):
            u = UniformStream(party_noise_key(1, 0, 0, 0))
            xs = [sample_poisson(lam, u) for _ in range(n)]
            self.assertLess(abs(statistics.fmean(xs) - lam), 5 * math.sqrt(lam / n), lam)
            self.assertLess(abs(statistics.pvariance(xs) / lam - 1), 5 * math.sqrt(2 / n), lam)

    def test_log_pmf_keeps_its_precision_near_a_large_mean(self):
        for k in (0, 5, 10, 100, 1000):
            exact = -90.5 + k * math.log(90.5) - math.lgamma(k + 1)
            self.assertAlmostEqual(log_poisson_pmf(k, 90.5), exact, delta=1e-9 + 1e-10 * abs(exact))
        lam, d = 1e14, 12345
        approx = -d * d / (2 * lam) - 0.5 * math.log(2 * math.pi * (lam + d))
        self.assertAlmostEqual(log_poisson_pmf(int(lam + d), lam), approx, delta=1e-6)


class Noise(unittest.TestCase):
    def noised(self, mu, seed, rnd, party, k=64):
        q = np.full(k + 3, 7, dtype=np.uint32)
        return add_party_noise(mu, seed, rnd, 1, party, k, q)

    def test_noise_is_keyed_and_only_on_the_values(self):
        a = self.noised(1e10, 11, 3, 1)
        np.testing.assert_array_equal(a, self.noised(1e10, 11, 3, 1))
        self.assertFalse(np.array_equal(a, self.noised(1e10, 11, 3, 2)))
        self.assertFalse(np.array_equal(a, self.noised(1e10, 11, 4, 1)))
        self.assertEqual(list(a[64:]), [7, 7, 7])
        self.assertFalse(np.array_equal(self.noised(1e10, 0, 3, 1), self.noised(1e10, 0, 3, 1)))
        np.testing.assert_array_equal(self.noised(0, 11, 3, 1), np.full(67, 7, dtype=np.uint32))

    def test_t_parties_sum_to_the_target_variance(self):
        k, t, target = 1500, 4, 4e12
        total = np.zeros(k, dtype=np.int64)
        for party in range(1, t + 1):
            q = add_party_noise(target / t, 5, 1, 0, party, k, np.zeros(k, dtype=np.uint32))
            total += q.view(np.int32).astype(np.int64)
        ratio = float(np.mean(total.astype(np.float64) ** 2)) / target
        self.assertLess(abs(ratio - 1), 5 * math.sqrt(2 / k))

    def test_bad_variances_are_refused(self):
        for mu in (-1.0, float("nan"), float("inf"), 2.0 ** 51):
            with self.assertRaises(InvalidArgument):
                self.noised(mu, 1, 1, 1)
        with self.assertRaises(InvalidArgument):
            add_party_noise(10.0, 1, 1, 1, 1, 8, np.zeros(4, dtype=np.uint32))


class Floor(unittest.TestCase):
    def test_the_partys_floor_is_the_cpp_partys(self):
        clips = [(0.5, 0.4), (1.0, 0.1)]
        mu = (0.2 * 1048576) ** 2  # multiplier 2 at t = 4, as party_noise_test
        for ok in (0.0, 1.99, 2.0):
            check_noise_floor(mu, 20, 4, clips, ok)
        with self.assertRaisesRegex(FailedPrecondition, "below --dp-min-multiplier 2.01"):
            check_noise_floor(mu, 20, 4, clips, 2.01)
        with self.assertRaises(FailedPrecondition):
            check_noise_floor(mu, 20, 1, clips, 1.5)
        with self.assertRaises(FailedPrecondition):
            check_noise_floor(0.0, 20, 4, clips, 0.1)
        with self.assertRaisesRegex(FailedPrecondition, "no L2 clip"):
            check_noise_floor(1e20, 20, 4, [(1.0, 0.0)], 0.1)


class Clip(unittest.TestCase):
    def test_words_stay_within_the_l2_clip_and_the_residual_keeps_the_rest(self):
        d = 600
        e = SecureEncoding(np.arange(1, d, 3, dtype=np.uint32), 1.0, 20, 5, 0, 0)
        rng = np.random.default_rng(3)
        delta = rng.normal(0, 0.2, d).astype(np.float32)
        weight, l2 = 0.5, 0.3
        left, q = add_client_input(delta, weight, 17, e, None, None, 0, l2)
        values = np.ldexp(q.view(np.int32).astype(np.float64), -20)
        norm = float(np.sqrt(np.sum(values ** 2)))
        self.assertLessEqual(norm, weight * l2 + math.sqrt(values.size) * 2.0 ** -20)
        self.assertAlmostEqual(norm, weight * l2, delta=1e-3 * weight * l2)
        sent = values / weight
        np.testing.assert_allclose(sent + left[e.support], delta[e.support], atol=1e-6)
        self.assertEqual(left[0], delta[0])
        bad = delta.copy()
        bad[int(e.support[3])] = np.nan
        _, q2 = add_client_input(bad, weight, 17, e, None, None, 0, l2)
        self.assertFalse(q2.any())
        with self.assertRaises(InvalidArgument):
            add_client_input(delta, weight, 17, e, None, None, 0, -1.0)


DP = ("--set", "privacy.mode=distributed", "--set", "privacy.noise_multiplier=1.5",
      "--set", "privacy.clip=0.4", "--set", "privacy.noise_seed=9")


class DistributedRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shefl-py-dp-")
        cls.runs = {}

        def run(name, *flags):
            out = os.path.join(cls.tmp, name)
            cls.runs[name] = (out, shefl_run(cls.tmp, CONFIG % name, out, "--set",
                                             "aggregation.secure=common_support", "--set",
                                             MIN_PARTIES, *flags))
        # One client a party either way: the same parties, the same noise.
        run("plain", "--daemons", "6")
        run("cpp", "--daemons", "6", *DP)
        run("mixed", "--daemons", "5", *python_flags("5"), *DP)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def summary(self, name):
        out, proc = self.runs[name]
        self.assertEqual(proc.returncode, 0, proc.stdout)
        with open(os.path.join(out, "summary.json")) as f:
            return json.load(f)

    def test_a_mixed_run_equals_the_cpp_only_run_and_the_noise_moved_it(self):
        cpp = self.summary("cpp")
        self.assertEqual(cpp["privacy"]["mode"], "distributed")
        self.assertEqual(len(cpp["model_sha256"]), 2)
        self.assertEqual(self.summary("mixed")["model_sha256"], cpp["model_sha256"])
        self.assertNotEqual(self.summary("plain")["model_sha256"], cpp["model_sha256"])
        for line in jsonl(os.path.join(self.runs["mixed"][0], "rounds.jsonl")):
            self.assertGreater(line["epsilon"], 0)
            for model, s in line["secure"].items():
                self.assertEqual(s["outcome"], "finished", (line["round"], model))
                self.assertEqual(s["survivors"], 6)


if __name__ == "__main__":
    unittest.main()
