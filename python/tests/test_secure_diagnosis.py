"""The support diagnosis in the Python party (secure.diagnose, clear_support
only; shefl_client.secure.support_diagnosis): the dense sum is each client's
weighted, clipped x with NaN as 0 and its own top-k joins the union; and a
clear_support run mixing C++ daemons and a Python party logs, every round
and member, the energy share and the own top-k overlap the C++-only run
logs (to float32 rounding), with the models of a run without the diagnosis
bit for bit: the diagnosis changes nothing it measures."""
import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np

from shefl_client.secure.support_diagnosis import (SupportDiagnosis, add_client_diagnosis,
                                                   dense_bytes, union_bytes)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mixed_run import jsonl, shefl_run  # noqa: E402
from test_secure_run import CONFIG, MIN_PARTIES, python_flags  # noqa: E402


class Diagnosis(unittest.TestCase):
    def test_the_dense_sum_and_the_union_by_hand(self):
        d = SupportDiagnosis()
        add_client_diagnosis(np.array([0.5, -3.0, np.nan, 0.1], np.float32),
                             np.array([0.25, 0.0, 1.0, 0.0], np.float32), 0.5, 1.0, 2, d)
        add_client_diagnosis(np.array([0.0, 0.0, 0.0, -0.2], np.float32), None, 0.25, 1.0, 1, d)
        np.testing.assert_allclose(d.dense, [0.375, -0.5, 0.0, 0.05 - 0.05])
        self.assertEqual(d.own_union.tolist(), [0, 1, 3])  # 1 (|-3|), 0 (0.75); then 3
        self.assertEqual(len(dense_bytes(d)), 16)
        self.assertEqual(np.frombuffer(union_bytes(d), "<u4").tolist(), [0, 1, 3])


class DiagnosedRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shefl-py-diagnosis-")
        cls.runs = {}
        layout = ("--set", "aggregation.secure=clear_support", "--set", MIN_PARTIES,
                  "--set", "secure.support=layout", "--set", "secure.vote=true")
        diagnose = ("--set", "secure.diagnose=true")
        for name, flags in (("cpp", ("--daemons", "6") + diagnose),
                            ("mixed", ("--daemons", "3") + python_flags("3-5") + diagnose),
                            ("plain", ("--daemons", "6"))):
            out = os.path.join(cls.tmp, name)
            cls.runs[name] = (out, shefl_run(cls.tmp, CONFIG % name, out, *layout, *flags))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def fits(self, name):
        out, proc = self.runs[name]
        self.assertEqual(proc.returncode, 0, proc.stdout)
        fits = {}
        for line in jsonl(os.path.join(out, "rounds.jsonl")):
            for model, s in line["secure"].items():
                self.assertEqual(s["outcome"], "finished", "%s %s" % (name, line))
                fits[(line["round"], model)] = (s.get("energy"), s.get("overlap"))
        return fits

    def models(self, name):
        with open(os.path.join(self.runs[name][0], "summary.json")) as f:
            return json.load(f)["model_sha256"]

    def test_a_mixed_diagnosed_run_logs_the_cpp_fits_and_changes_no_model(self):
        cpp, mixed = self.fits("cpp"), self.fits("mixed")
        self.assertEqual(sorted(cpp), sorted(mixed))
        self.assertEqual(len(cpp), 6)  # 3 rounds x 2 members
        for key, (energy, overlap) in cpp.items():
            self.assertTrue(0 < energy <= 1 and 0 < overlap <= 1, (key, energy, overlap))
            self.assertAlmostEqual(mixed[key][0], energy, places=5)
            self.assertAlmostEqual(mixed[key][1], overlap, places=9)
        self.assertEqual(set(self.fits("plain").values()), {(None, None)})
        self.assertEqual(self.models("cpp"), self.models("plain"))
        self.assertEqual(self.models("mixed"), self.models("plain"))


if __name__ == "__main__":
    unittest.main()
