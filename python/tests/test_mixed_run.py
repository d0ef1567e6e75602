"""A mixed run: C++ daemons and a Python client in the same rounds, under
mutual TLS, started by `shefl run --python-clients`. The coordinator's books
equal each side's byte for byte, and with the Python client training as the
C++ daemon does (the same mlp, batch order and optimiser on CPU, one
thread) the models equal a C++-only run's bit for bit (summary.json's
model_sha256). Then the faults: kill -9 of the Python client mid-run is
survived, and its restart rejoins with its error-feedback residuals."""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from support import BIN, ROOT, synthetic_config

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "reference_client.py")


def config(name, rounds, extra=""):
    """The synthetic run with a Dirichlet split, momentum and 4 clients a
    round; `extra` goes under compression:."""
    return synthetic_config(name, rounds, per_round_lpc=3,
                            partition="partition:\n  scheme: dirichlet\n  alpha: 0.5\n",
                            train_extra="  momentum: 0.5\n", extra=extra)


def read(path):
    with open(path) as f:
        return f.read()


def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def shefl_run(tmp, cfg_text, out, *flags, timeout=240, threads=1):
    cfg = os.path.join(tmp, os.path.basename(out) + ".yaml")
    with open(cfg, "w") as f:
        f.write(cfg_text)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    return subprocess.run([os.path.join(BIN, "shefl"), "run", cfg, "--out", out,
                           "--threads", str(threads), *flags], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout, text=True)


def books(out):
    """(coordinator's, daemons') (round, client) -> counts."""
    coordinator = {}
    for line in jsonl(os.path.join(out, "rounds.jsonl")):
        for client, counts in line["bytes_by_client"].items():
            coordinator[(line["round"], client)] = counts
    daemons, by_daemon = {}, {}
    for path in glob.glob(os.path.join(out, "daemons", "*.jsonl")):
        name = os.path.basename(path)[:-len(".jsonl")]
        for line in jsonl(path):
            for client, counts in line["bytes_by_client"].items():
                assert (line["round"], client) not in daemons, "booked twice"
                daemons[(line["round"], client)] = counts
                by_daemon.setdefault(name, set()).add(int(client))
    return coordinator, daemons, by_daemon


class MixedRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shefl-py-mixed-")
        cls.cpp = os.path.join(cls.tmp, "cpp")
        cls.mixed = os.path.join(cls.tmp, "mixed")
        text = config("mixed", 3)
        cls.cpp_run = shefl_run(cls.tmp, text, cls.cpp, "--daemons", "2")
        cls.mixed_run = shefl_run(cls.tmp, text, cls.mixed, "--daemons", "1",
                                  "--python-clients", "0,3-4", "--python-script", REFERENCE,
                                  "--python", sys.executable)
        # Two tasks at once in each daemon, one thread each.
        cls.mixed2 = os.path.join(cls.tmp, "mixed2")
        cls.mixed2_run = shefl_run(cls.tmp, text, cls.mixed2, "--daemons", "1",
                                   "--python-clients", "1-3,5", "--python-script", REFERENCE,
                                   "--python", sys.executable, threads=2)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def summary(self, out):
        with open(os.path.join(out, "summary.json")) as f:
            return json.load(f)

    def test_both_runs_finish(self):
        self.assertEqual(self.cpp_run.returncode, 0, self.cpp_run.stdout)
        self.assertEqual(self.mixed_run.returncode, 0, self.mixed_run.stdout)
        self.assertEqual(len(jsonl(os.path.join(self.mixed, "rounds.jsonl"))), 3)

    def test_the_python_client_trained_under_mutual_tls(self):
        log = read(os.path.join(self.mixed, "logs", "python-0.log"))
        # The coordinator demands a client certificate (--tls-client-ca):
        # the Python client registered with the next one shefl run made.
        with open(os.path.join(self.mixed, "launch.json")) as f:
            self.assertFalse(json.load(f)["insecure"])
        self.assertTrue(os.path.exists(os.path.join(self.mixed, "certs", "client-1.pem")))
        self.assertIn("registered daemon 'python-0'",
                      read(os.path.join(self.mixed, "logs", "coordinator.log")))
        self.assertNotIn("insecure", log)
        self.assertIn("registered with", log)
        self.assertRegex(log, r"round \d+ client [034] model \d: sent")
        self.assertNotIn("refused", log)

    def test_books_agree_byte_for_byte(self):
        coordinator, daemons, by_daemon = books(self.mixed)
        self.assertGreater(len(coordinator), 0)
        self.assertEqual(set(coordinator), set(daemons))
        for key, counts in coordinator.items():
            self.assertEqual(daemons[key], counts, "round %d client %s" % key)
        self.assertEqual(by_daemon["python-0"], {0, 3, 4})
        python_payload = sum(c["payload_up"] for (r, cl), c in daemons.items() if cl in "034")
        self.assertGreater(python_payload, 0)

    def test_models_equal_a_cpp_only_run(self):
        cpp, mixed = self.summary(self.cpp), self.summary(self.mixed)
        self.assertEqual(len(cpp["model_sha256"]), 3)
        self.assertEqual(mixed["model_sha256"], cpp["model_sha256"])
        self.assertEqual(mixed["final_accuracy"], cpp["final_accuracy"])

    def test_two_tasks_at_once_change_nothing(self):
        self.assertEqual(self.mixed2_run.returncode, 0, self.mixed2_run.stdout)
        self.assertIn("2 tasks at once",
                      read(os.path.join(self.mixed2, "logs", "python-0.log")))
        self.assertEqual(self.summary(self.mixed2)["model_sha256"],
                         self.summary(self.cpp)["model_sha256"])
        coordinator, daemons, _ = books(self.mixed2)
        self.assertEqual(coordinator, daemons)

    def test_same_bytes_as_a_cpp_only_run(self):
        cpp, _, _ = books(self.cpp)
        mixed, _, _ = books(self.mixed)
        payload = lambda b: {k: (v["payload_up"], v["payload_down"]) for k, v in b.items()}
        self.assertEqual(payload(mixed), payload(cpp))


class Faults(unittest.TestCase):
    def test_kill_9_mid_run_is_survived_and_residuals_come_back(self):
        tmp = tempfile.mkdtemp(prefix="shefl-py-fault-")
        try:
            out = os.path.join(tmp, "run")
            text = config("fault", 8, "  error_feedback: true\n  value_type: fp16\n")
            cfg = os.path.join(tmp, "c.yaml")
            with open(cfg, "w") as f:
                f.write(text)
            env = dict(os.environ)
            env["PYTHONPATH"] = os.path.join(ROOT, "python")
            run = subprocess.Popen([os.path.join(BIN, "shefl"), "run", cfg, "--out", out,
                                    "--threads", "1", "--python-clients", "0-5",
                                    "--python-script", REFERENCE, "--python", sys.executable],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True)
            books_file = os.path.join(out, "daemons", "python-0.jsonl")
            residuals = os.path.join(out, "daemons", "state", "residuals")
            deadline = time.time() + 120
            while time.time() < deadline and not (
                    os.path.exists(books_file) and len(jsonl(books_file)) >= 2):
                time.sleep(0.2)
            self.assertTrue(os.path.exists(books_file), "the Python client booked no round")
            self.assertTrue(glob.glob(os.path.join(residuals, "*.ef")), "no residual on disk")
            with open(os.path.join(out, "endpoints.json")) as f:
                pid = [d["pid"] for d in json.load(f)["daemons"] if d["name"] == "python-0"][0]
            os.kill(pid, signal.SIGKILL)
            output, _ = run.communicate(timeout=240)
            self.assertEqual(run.returncode, 0, output)
            self.assertEqual(len(jsonl(os.path.join(out, "rounds.jsonl"))), 8)
            log = read(os.path.join(out, "logs", "python-0.log"))
            self.assertRegex(log, r"\d+ error-feedback residuals restored")
            self.assertGreaterEqual(log.count("registered with"), 2)
            # Every client is Python's: a model version is fetched once for
            # all the clients that need it, each booked as its own download.
            lines = jsonl(books_file)
            logical = sum(r["download_bytes_logical"] for r in lines)
            physical = sum(r["download_bytes_physical"] for r in lines)
            self.assertLess(physical, logical)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
