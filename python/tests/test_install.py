"""`pip install ./python` works offline with Debian's packages: into a venv
that sees the system's site-packages, without build isolation and without
an index, from pyproject.toml alone; the installed package carries its
generated gRPC modules (with relative imports) and its py.typed marker."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from support import ROOT


class Install(unittest.TestCase):
    def test_pip_install_offline_into_a_venv(self):
        tmp = tempfile.mkdtemp(prefix="shefl-py-install-")
        try:
            src = os.path.join(tmp, "src")
            # A copy: an in-tree build leaves build/ and *.egg-info behind.
            # The copy leaves out what a build of the checkout generated.
            shutil.copytree(os.path.join(ROOT, "python"), os.path.join(src, "python"),
                            ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info",
                                                          "*_pb2.py", "*_pb2_grpc.py",
                                                          ".mypy_cache"))
            shutil.copytree(os.path.join(ROOT, "proto"), os.path.join(src, "proto"),
                            ignore=shutil.ignore_patterns("CMakeLists.txt"))
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           check=True)
            pip = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index",
                                  "--no-build-isolation", os.path.join(src, "python")],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(pip.returncode, 0, pip.stdout)
            check = subprocess.run(
                [os.path.join(venv, "bin", "python"), "-c",
                 "import os, shefl_client, shefl_client.client; "
                 "from shefl_client._proto import shefl_pb2, shefl_pb2_grpc; "
                 "print(shefl_client.__file__); print(shefl_pb2_grpc.__file__); "
                 "print(shefl_pb2.RegisterRequest(want_model_layout=True).want_model_layout); "
                 "print(os.path.exists(os.path.join(os.path.dirname(shefl_client.__file__), "
                 "'py.typed')))"],
                cwd=tmp, env={"PATH": os.environ.get("PATH", "")},
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(check.returncode, 0, check.stdout)
            lines = check.stdout.split()
            self.assertTrue(lines[0].startswith(venv), check.stdout)
            self.assertIn(os.path.join("shefl_client", "_proto"), lines[1])
            self.assertEqual(lines[2], "True")
            self.assertEqual(lines[3], "True", "py.typed is not installed")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
