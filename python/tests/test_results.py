"""shefl_client.results on a real run folder: the test runs build/bin/shefl
(SHEFL_BIN_DIR overrides where) on a small synthetic experiment and reads
what it wrote, then a half-written line and a folder that holds no run."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from shefl_client.results import RunFolderError, load_run
from support import BIN, synthetic_config


class ResultsApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shefl-py-results-")
        config = os.path.join(cls.tmp, "c.yaml")
        with open(config, "w") as f:
            f.write(synthetic_config("python-results", 2))
        cls.run_dir = os.path.join(cls.tmp, "run")
        shefl = os.path.join(BIN, "shefl")
        if not os.access(shefl, os.X_OK):
            raise RuntimeError("%s is not built (set SHEFL_BIN_DIR)" % shefl)
        r = subprocess.run([shefl, "run", config, "--out", cls.run_dir, "--daemons", "2"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)
        if r.returncode != 0:
            raise RuntimeError("shefl run failed:\n" + r.stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_a_finished_run_reads_whole(self):
        run = load_run(self.run_dir)
        self.assertTrue(run.finished)
        self.assertEqual([r["round"] for r in run.rounds], [1, 2])
        self.assertEqual(run.config["rounds"], 2)
        self.assertEqual(run.config["model"]["name"], "mlp")
        self.assertEqual(run.summary["rounds"], 2)
        self.assertEqual(len(run.summary["model_sha256"]), 3)
        self.assertEqual(len(run.daemons), 2)
        # The daemons' books are per round and client, as the files hold.
        for lines in run.daemons.values():
            self.assertTrue(all("round" in line for line in lines))
        self.assertIn("2 rounds, finished", repr(run))

    def test_a_line_being_written_is_left_out(self):
        copy = os.path.join(self.tmp, "partial")
        shutil.copytree(self.run_dir, copy)
        os.remove(os.path.join(copy, "summary.json"))
        with open(os.path.join(copy, "rounds.jsonl"), "a") as f:
            f.write('{"round": 3, "ensemble_acc')
        run = load_run(copy)
        self.assertEqual(len(run.rounds), 2)
        self.assertFalse(run.finished)

    def test_what_is_not_a_run_is_refused_by_name(self):
        with self.assertRaisesRegex(RunFolderError, "not a run folder"):
            load_run(self.tmp)
        with self.assertRaisesRegex(RunFolderError, "no such folder"):
            load_run(os.path.join(self.tmp, "nowhere"))
        broken = os.path.join(self.tmp, "broken")
        os.makedirs(broken, exist_ok=True)
        with open(os.path.join(broken, "rounds.jsonl"), "w") as f:
            f.write(json.dumps({"round": 1}) + "\nnot json\n")
        with self.assertRaisesRegex(RunFolderError, r"rounds.jsonl:2: not JSON"):
            load_run(broken)


if __name__ == "__main__":
    unittest.main()
