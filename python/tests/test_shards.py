"""The Python client draws what the C++ side draws: the random streams,
every partition scheme, the held-out split and the synthetic data set
(tests/data/shard_vectors.json, written by tests/shard_vectors_test.cc)."""
import json
import os
import unittest

import numpy as np

from shefl_client import data, partition
from shefl_client import rng as R
from support import ROOT

VECTORS = os.path.join(ROOT, "tests", "data", "shard_vectors.json")


class Shards(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(VECTORS) as f:
            cls.v = json.load(f)

    def test_mt19937_64_is_the_standard_one(self):
        # The C++ standard fixes the 10000th draw of a default-seeded engine.
        g = R.MT19937_64(5489)
        for _ in range(9999):
            g()
        self.assertEqual(g(), 9981545732273789042)

    def test_streams(self):
        for s in self.v["streams"]:
            with self.subTest(seed=s["seed"], purpose=s["purpose"]):
                seed = R.derive_seed(s["seed"], s["purpose"], s["tags"])
                self.assertEqual(seed, s["derived"])
                g = R.MT19937_64(seed)
                draws = [g() for _ in range(700)]
                self.assertEqual(draws[:5], s["draws_0_5"])
                self.assertEqual(draws[699], s["draw_699"])
                self.assertEqual(R.shuffle(list(range(50)), g), s["shuffle_50"])
                self.assertEqual(R.standard_normal(g), s["normal"])

    def test_partitions(self):
        labels = [(7 * i + i // 13) % 10 for i in range(997)]
        for p in self.v["partitions"]:
            for client, want in p["clients"].items():
                with self.subTest(case=p["name"], client=client):
                    got = partition.client_indices(p, labels, 10, p["num_clients"], int(client),
                                                   p["seed"])
                    self.assertEqual(got, want)

    def test_holdout(self):
        h = self.v["holdout"]
        train, held = partition.split_holdout(h["shard"], h["fraction"], h["seed"], h["client"])
        self.assertEqual(train, h["train"])
        self.assertEqual(held, h["held_out"])

    def test_synthetic(self):
        s = self.v["synthetic"]
        d = data.synthetic({"synthetic_train": s["train"], "synthetic_features": s["features"],
                            "synthetic_classes": s["classes"]}, s["seed"])
        self.assertEqual(d.y.tolist(), s["y"])
        np.testing.assert_array_equal(d.x.reshape(-1), np.array(s["x"], dtype=np.float32))

    def test_bad_partition_names_the_key(self):
        with self.assertRaisesRegex(partition.PartitionError, "partition.shards"):
            partition.client_indices({"scheme": "shards", "shards": 5, "shards_per_client": 2},
                                     [0] * 100, 1, 10, 0, 1)
        with self.assertRaisesRegex(partition.PartitionError, "own"):
            partition.client_indices({"scheme": "own"}, [0] * 10, 1, 2, 0, 1)


if __name__ == "__main__":
    unittest.main()
