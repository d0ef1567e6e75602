"""A Python client that sends a bad upload gets the same refusal, with the
same reason, as a C++ daemon doing the same (shefl-client --adversary
huge: one coordinate of 1e38 against aggregation.robust), beside an honest
daemon, with a real coordinator on 127.0.0.1."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from support import BIN, ROOT, free_port
from test_mixed_run import config

HERE = os.path.dirname(os.path.abspath(__file__))


def refusals(path):
    """The refusal reasons a daemon logged, client and model numbers blanked."""
    out = set()
    with open(path, errors="replace") as f:
        lines = f.readlines()
    for line in lines:
        m = re.search(r"client \d+ model \d+: upload refused: (.*)$", line)
        if m:
            out.add(re.sub(r"client \d+ model \d+ round \d+", "client C model M round R",
                           m.group(1)))
    return out


class Refusals(unittest.TestCase):
    def test_a_python_client_is_refused_as_a_cpp_daemon_is(self):
        tmp = tempfile.mkdtemp(prefix="shefl-py-refusal-")
        procs = []
        try:
            cfg = os.path.join(tmp, "c.yaml")
            with open(cfg, "w") as f:
                f.write(config("refusals", 3).replace("compression:",
                                                      "aggregation:\n  robust: true\ncompression:"))
            port = free_port()
            target = "127.0.0.1:%d" % port
            env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))

            def start(name, argv):
                log = open(os.path.join(tmp, name + ".log"), "w")
                procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                              env=env))
                return log.name

            start("coordinator", [os.path.join(BIN, "shefl-coordinator"), "--config", cfg,
                                  "--out", os.path.join(tmp, "run"), "--listen", target,
                                  "--insecure", "--threads", "1"])
            common = ["--coordinator", target, "--insecure", "--threads", "1",
                      "--out", os.path.join(tmp, "run", "daemons")]
            cpp = start("cpp", [os.path.join(BIN, "shefl-client"), "--clients", "1-2",
                                "--adversary", "huge", "--name", "cpp"] + common)
            start("honest", [os.path.join(BIN, "shefl-client"), "--clients", "5",
                             "--name", "honest"] + common)
            py = start("py", [sys.executable, os.path.join(HERE, "reference_client.py"),
                              "--clients", "0,3-4", "--adversary", "huge", "--name", "py"]
                       + common)
            deadline = time.time() + 120
            while time.time() < deadline and not (refusals(cpp) and refusals(py)):
                time.sleep(0.2)
            self.assertTrue(refusals(py), "no refusal in the Python client's log")
            self.assertEqual(refusals(py), refusals(cpp))
            self.assertIn("client C model M round R: value 1e+38 at index 0 is beyond "
                          "robust.max_abs = 10000", refusals(py))
        finally:
            for p in procs:
                p.kill()
                p.wait()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
