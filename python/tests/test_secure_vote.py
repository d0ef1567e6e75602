"""The vote of secure aggregation in the Python party
(shefl_client.secure.secure_input): a client's own top-k follows the C++
rule (largest magnitudes, ties to the lower coordinate, NaN last); its
positions count once in their row and once in their column; the counts ride
after the K values and leave the values and the residual as they were; and
a run under secure.support: layout with secure.vote on, mixing C++ daemons
and a Python party, gives the C++-only run's models bit for bit (the vote's
counts summed exactly under the masks, so both chose the same supports),
in 32-bit words and in 16-bit ones (secure.word_bits: 16, whose values go
up in 2 bytes: input_bytes)."""
import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np

from shefl_client.secure.secure_input import (SecureEncoding, add_client_input, add_vote_counts,
                                              input_bytes, own_top_k, secure_update)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mixed_run import REFERENCE, jsonl, shefl_run  # noqa: E402
from test_secure_run import CONFIG, MIN_PARTIES, python_flags  # noqa: E402


def slow_top_k(x, k):
    """The rule the slow way: a stable sort by magnitude, NaN last."""
    mags = np.where(np.isnan(x), -1.0, np.abs(x.astype(np.float64)))
    order = sorted(range(x.size), key=lambda i: -mags[i])  # stable: ties low
    return np.array(sorted(order[:min(k, x.size)]), dtype=np.int64)


class VoteCounts(unittest.TestCase):
    def test_own_top_k_is_the_cpp_rule(self):
        x = np.array([0.5, -2.0, 1.0, -1.0, np.nan, 1.0, 0.0, -3.0], np.float32)
        self.assertEqual(own_top_k(x, 0).tolist(), [])
        self.assertEqual(own_top_k(x, 2).tolist(), [1, 7])
        self.assertEqual(own_top_k(x, 4).tolist(), [1, 2, 3, 7])  # three tie at 1.0
        self.assertEqual(own_top_k(x, 7).tolist(), [0, 1, 2, 3, 5, 6, 7])
        self.assertEqual(own_top_k(x, 100).size, 8)
        g = np.random.default_rng(3)
        for _ in range(20):
            y = (g.integers(-20, 21, 500) / 8).astype(np.float32)
            for k in (1, 17, 250, 499):
                np.testing.assert_array_equal(own_top_k(y, k), slow_top_k(y, k))

    def test_each_position_counts_in_its_row_and_column(self):
        grids = [(10, 3, 4), (30, 2, 5)]
        q = add_vote_counts([5, 10, 15, 21, 25, 36], grids, 2, np.zeros(16, np.uint32))
        self.assertEqual(q.tolist(), [0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0])

    def test_the_counts_ride_after_the_values(self):
        g = np.random.default_rng(4)
        d = 3000
        support = np.arange(1, d, 11, dtype=np.uint32)
        plain = SecureEncoding(support, 0.05, 24, 4, 2, 1)
        voted = SecureEncoding(support, 0.05, 24, 4, 2, 1, [(0, 20, 50), (1000, 40, 25)])
        self.assertEqual(voted.words(), support.size + 135)
        delta = (g.standard_normal(d) * 0.03).astype(np.float32)
        left, q = add_client_input(delta, 0.5, 7, voted, None, None, 60)
        left_plain, q_plain = add_client_input(delta, 0.5, 7, plain, None, None, 60)
        np.testing.assert_array_equal(q[:support.size], q_plain)
        np.testing.assert_array_equal(left, left_plain)
        want = add_vote_counts(slow_top_k(delta, 60), voted.vote, 0, np.zeros(135, np.uint32))
        np.testing.assert_array_equal(q[support.size:], want)
        self.assertEqual(secure_update(q, 0.5, voted).size, support.size)

    def test_16_bit_values_go_up_in_2_bytes_and_counts_in_4(self):
        e = SecureEncoding(np.arange(3, dtype=np.uint32), vote=[(0, 1, 1)], word_bits=16)
        y = np.array([0x12345678, 0xFFFF0001, 7, 0xAABBCCDD, 0x01020304], np.uint32)
        self.assertEqual(input_bytes(y, e).hex(), "7856" "0100" "0700" "ddccbbaa" "04030201")
        e.word_bits = 32
        self.assertEqual(len(input_bytes(y, e)), 20)


class VoteRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shefl-py-vote-")
        cls.runs = {}
        narrow = ("--set", "secure.word_bits=16", "--set", "secure.scale_bits=12")
        for name, flags in (("cpp", ("--daemons", "6")),
                            ("mixed", ("--daemons", "3") + python_flags("3-5")),
                            ("cpp16", ("--daemons", "6") + narrow),
                            ("mixed16", ("--daemons", "3") + python_flags("3-5") + narrow)):
            out = os.path.join(cls.tmp, name)
            cls.runs[name] = (out, shefl_run(
                cls.tmp, CONFIG % name, out, "--set", "aggregation.secure=common_support",
                "--set", MIN_PARTIES, "--set", "secure.support=layout", "--set",
                "secure.vote=true", *flags))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_a_mixed_vote_run_equals_a_cpp_only_run(self):
        sums = {}
        for name, (out, proc) in self.runs.items():
            self.assertEqual(proc.returncode, 0, proc.stdout)
            for line in jsonl(os.path.join(out, "rounds.jsonl")):
                for model, s in line["secure"].items():
                    self.assertEqual(s["outcome"], "finished", "%s %s" % (name, line))
                    self.assertEqual(s["words"], 4441 + 400)  # K and the 200 x 200 grid
            with open(os.path.join(out, "summary.json")) as f:
                sums[name] = json.load(f)["model_sha256"]
        self.assertEqual(len(sums["cpp"]), 2)
        self.assertEqual(sums["mixed"], sums["cpp"])
        self.assertEqual(sums["mixed16"], sums["cpp16"])
        self.assertNotEqual(sums["cpp16"], sums["cpp"])  # f = 12 rounds otherwise


if __name__ == "__main__":
    unittest.main()
