"""python/examples/fmnist_client.py, a user's own CNN and training loop on
Fashion-MNIST, joins `shefl run configs/quick.yaml --python-clients` (the
launcher finds the example itself) beside a C++ daemon. Its loop takes
the C++ daemon's batch order and its CNN runs channels-last as the C++
one does, so the ensemble equals a C++-only run's bit for bit."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from support import BIN, ROOT

# fp32 as written: quick.yaml's `precision: auto` would train in bf16 on
# a CPU with bf16 units, and this holds the fp32 path bit for bit.
SETTINGS = ["--set", "rounds=2", "--set", "train.local_steps=4",
            "--set", "eval.max_test_samples=500", "--threads", "1",
            "--set", "train.precision=fp32", "--set", "eval.precision=fp32"]


class Example(unittest.TestCase):
    def run_quick(self, out, *flags):
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        return subprocess.run([os.path.join(BIN, "shefl"), "run",
                               os.path.join(ROOT, "configs", "quick.yaml"), "--out", out]
                              + SETTINGS + list(flags), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)

    def test_the_example_joins_and_reaches_the_cpp_models(self):
        self.assertTrue(os.path.exists("/usr/share/datasets/fashion-mnist"),
                        "needs Debian's dataset-fashion-mnist (scripts/setup.sh installs it)")
        tmp = tempfile.mkdtemp(prefix="shefl-py-example-")
        try:
            cpp = self.run_quick(os.path.join(tmp, "cpp"))
            self.assertEqual(cpp.returncode, 0, cpp.stdout)
            mixed = self.run_quick(os.path.join(tmp, "mixed"), "--python-clients", "0-4,15",
                                   "--python", sys.executable)
            self.assertEqual(mixed.returncode, 0, mixed.stdout)
            self.assertIn("clients 5-14,16-19, 0-4,15", mixed.stdout)
            summaries = []
            for run in ("cpp", "mixed"):
                with open(os.path.join(tmp, run, "summary.json")) as f:
                    summaries.append(json.load(f))
            self.assertEqual(len(summaries[0]["model_sha256"]), 3)  # quick.yaml: M = 3
            self.assertEqual(summaries[1]["model_sha256"], summaries[0]["model_sha256"])
            with open(os.path.join(tmp, "mixed", "logs", "python-0.log")) as f:
                self.assertIn("model 'cnn'", f.read())
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
