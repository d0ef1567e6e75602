"""Top-k with the C++ tie rule, error feedback and its residual files, and
the flat layout contract (python/shefl_client/compress.py, flat.py)."""
import os
import shutil
import struct
import tempfile
import unittest

import numpy as np
import torch
import torch.nn as nn

from shefl_client import codec, flat
from shefl_client.compress import DeltaCompressor, ResidualBook, fingerprint, top_k


def reference_top_k(x, k):
    # Sort by (-|x|, index): the largest magnitudes, ties to the lower index.
    order = sorted(range(len(x)), key=lambda i: (-abs(float(x[i])), i))[:k]
    return sorted(order)


class TopK(unittest.TestCase):
    def test_ties_at_the_threshold_go_to_the_lower_indices(self):
        x = torch.tensor([0.5, -2.0, 1.0, -1.0, 1.0, 3.0, 1.0], dtype=torch.float32)
        idx, vals = top_k(x, 4)
        self.assertEqual(idx.tolist(), [1, 2, 3, 5])
        self.assertEqual(vals.tolist(), [-2.0, 1.0, -1.0, 3.0])

    def test_random_deltas_match_the_rule(self):
        g = torch.Generator().manual_seed(3)
        for d, k in [(1, 1), (10, 0), (10, 10), (1000, 37), (5000, 500)]:
            x = torch.randn(d, generator=g)
            x[::7] = x[0]  # plenty of ties
            idx, vals = top_k(x, k)
            self.assertEqual(idx.tolist(), reference_top_k(x, k), (d, k))
            self.assertTrue(torch.equal(vals, x[idx]))

    def test_nan_is_refused_naming_the_index(self):
        x = torch.zeros(5)
        x[3] = float("nan")
        with self.assertRaisesRegex(ValueError, "index 3"):
            top_k(x, 2)


class Residuals(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="shefl-py-ef-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_files_are_the_cpp_format_and_come_back(self):
        book = ResidualBook(self.dir, fingerprint("config text"))
        book.stage(3, 1, 5, torch.tensor([1.5, -2.0], dtype=torch.float32))
        data = open(os.path.join(self.dir, "c3-m1-r5.ef"), "rb").read()
        self.assertEqual(data[:8], b"SHEFLEF1")
        self.assertEqual(struct.unpack_from("<Qqq", data, 8),
                         (fingerprint("config text"), 5, 2))
        self.assertEqual(np.frombuffer(data[32:], "<f4").tolist(), [1.5, -2.0])
        again = ResidualBook(self.dir, fingerprint("config text"))
        self.assertEqual(again.load([3]), 1)
        self.assertEqual(again.in_force(3, 1, 6).tolist(), [1.5, -2.0])
        other_run = ResidualBook(self.dir, fingerprint("another config"))
        self.assertEqual(other_run.load([3]), 0)
        self.assertEqual(ResidualBook(self.dir, fingerprint("config text")).load([4]), 0)

    def test_a_round_handed_out_again_drops_it_and_later(self):
        book = ResidualBook(self.dir, 1)
        for r in range(1, 6):
            book.stage(0, 0, r, torch.full((2,), float(r)))
        # Three newest on disk.
        self.assertEqual(sorted(os.listdir(self.dir)),
                         ["c0-m0-r3.ef", "c0-m0-r4.ef", "c0-m0-r5.ef"])
        self.assertEqual(book.in_force(0, 0, 5).tolist(), [4.0, 4.0])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "c0-m0-r5.ef")))
        book.discard(0, 0, 4)
        self.assertEqual(book.in_force(0, 0, 5).tolist(), [3.0, 3.0])

    def test_fp16_rounding_is_fed_back(self):
        comp = DeltaCompressor("fp16", True, self.dir, 9)
        delta = torch.tensor([1.0001, 0.0, -3.0001, 0.5], dtype=torch.float32)
        encoded, nnz = comp.compress(0, 0, 1, delta, 2)
        self.assertEqual(nnz, 2)
        idx, sent = codec.decode(encoded, 4, 4)
        self.assertEqual(idx.tolist(), [0, 2])
        residual = comp.residuals.in_force(0, 0, 2)
        want = delta.clone()
        want[[0, 2]] -= torch.from_numpy(sent)
        self.assertTrue(torch.equal(residual, want))
        # The next round sends delta + residual.
        encoded2, _ = comp.compress(0, 0, 2, torch.zeros(4), 1)
        idx2, _ = codec.decode(encoded2, 4, 4)
        self.assertEqual(idx2.tolist(), [3])

    def test_a_refusal_puts_the_earlier_residual_back(self):
        comp = DeltaCompressor("fp32", True, self.dir, 9)
        comp.compress(0, 0, 1, torch.tensor([1.0, 2.0, 3.0]), 1)
        comp.compress(0, 0, 2, torch.tensor([5.0, 0.0, 0.0]), 1)
        comp.settle(0, 0, 2, accepted=False)
        self.assertEqual(comp.residuals.in_force(0, 0, 3).tolist(), [1.0, 2.0, 0.0])


class Layout(unittest.TestCase):
    def layout(self, module):
        return [(n, list(t.shape), b) for n, t, b in flat.state_tensors(module)]

    def test_parameters_then_floating_buffers(self):
        m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
        names = [n for n, _, _ in flat.state_tensors(m)]
        self.assertEqual(names, ["0.weight", "0.bias", "1.weight", "1.bias",
                                 "1.running_mean", "1.running_var"])
        v = torch.arange(flat.flat_size(m), dtype=torch.float32)
        flat.load_flat(m, v)
        self.assertTrue(torch.equal(flat.flatten(m), v))

    def test_a_different_module_is_refused_naming_the_tensor(self):
        theirs = self.layout(nn.Sequential(nn.Linear(16, 200), nn.Linear(200, 4)))
        flat.check_layout(nn.Sequential(nn.Linear(16, 200), nn.Linear(200, 4)), theirs)
        with self.assertRaisesRegex(flat.ModelContractError,
                                    r"tensor 0 is 0.weight \[100, 16\] here but 0.weight "
                                    r"\[200, 16\] there \(flat size 2104 here, 4204 there\)"):
            flat.check_layout(nn.Sequential(nn.Linear(16, 100), nn.Linear(100, 4)), theirs)
        with self.assertRaisesRegex(flat.ModelContractError, "3 tensors here, 4 there"):
            flat.check_layout(nn.Sequential(nn.Linear(16, 200), nn.Linear(200, 4, bias=False)),
                              theirs)


if __name__ == "__main__":
    unittest.main()
