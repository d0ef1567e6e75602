#!/usr/bin/env python3
"""Compiles the LibTorch-using sources against LibTorch 2.x's headers.

    torch2_check.py COMPILE_COMMANDS_JSON ROOT TORCH2_DIR [FILE...]

The build uses Debian 12's LibTorch 1.13; GPU machines run 2.x, whose
headers declare less through the ones the project includes (at::NoGradGuard
was the first casualty) and which needs C++20. This runs `g++ -std=gnu++20
-fsyntax-only` with each file's defines and include paths from the compile
database, LibTorch's include folders swapped for TORCH2_DIR's (a `dpkg -x`
of sid's libtorch-dev, scripts/fetch_libtorch2.sh), two files at a time,
over every source of common/data, common/learn, server/round, client/ and
server/coordinator*.cc, server/run_history.cc (or over FILE..., which need
not be in the database: those that are not take the flags of
common/learn/train.cc). Exits 1 naming each file that fails and its first
error, after the diagnostics; 2 when TORCH2_DIR lacks the headers. Run by
torch2_test.
"""
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys

SCOPE = re.compile(r"/(common/data|common/learn|server/round|client)/[^/]+\.cc$"
                   r"|/server/(coordinator[^/]*|run_history)\.cc$")
FIRST_ERROR = re.compile(r"^\S.*: (fatal )?error: .*$", re.M)


def torch_include(d):
    """A LibTorch include folder of the 1.13 build: its C++ API folder (the
    rest sits in /usr/include, which the 2.x folders below come before)."""
    return d.rstrip("/").endswith("torch/csrc/api/include")


def flags_of(entry, torch2_include):
    args = entry.get("arguments") or shlex.split(entry["command"])
    keep, i = [], 1  # args[0] is the compiler (or ccache)
    while i < len(args):
        a = args[i]
        if a in ("-o", "-MF", "-MT", "-c"):
            i += 2 if a != "-c" else 1
            continue
        if a in ("-isystem", "-I", "-D", "-include"):
            if not (a in ("-isystem", "-I") and torch_include(args[i + 1])):
                keep += [a, args[i + 1]]
            i += 2
            continue
        if re.match(r"^-(I|D|isystem)", a) and not torch_include(a[2:]):
            keep.append(a)
        i += 1
    # -isystem folders come before the system's /usr/include, which holds
    # 1.13's ATen/, c10/ and torch/.
    return ["-std=gnu++20",
            "-isystem", torch2_include + "/torch/csrc/api/include",
            "-isystem", torch2_include, *keep]


def check(entry, path, torch2_include):
    cmd = ["g++", "-fsyntax-only", *flags_of(entry, torch2_include), path]
    # LC_ALL=C: plain quotes in g++'s messages, whatever the caller's locale.
    r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True,
                       text=True, env={**os.environ, "LC_ALL": "C"})
    return path, r.returncode, r.stderr


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    db_path, root, torch2 = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3]
    extra = sys.argv[4:]
    include = os.path.join(torch2, "usr/include")
    if not os.path.exists(os.path.join(include, "torch/csrc/api/include/torch/torch.h")):
        print(f"torch2_check: no LibTorch 2.x headers in {torch2}: run "
              f"`SHEFL_SETUP=test scripts/setup.sh` (or scripts/fetch_libtorch2.sh "
              f"{torch2}), which downloads sid's libtorch-dev there",
              file=sys.stderr)
        return 2
    db = json.load(open(db_path))
    if extra:
        by_file = {e["file"]: e for e in db}
        model = next(e for e in db if e["file"].endswith("common/learn/train.cc"))
        jobs = [(by_file.get(os.path.realpath(f), model), os.path.realpath(f))
                for f in extra]
    else:
        jobs = [(e, e["file"]) for e in db
                if e["file"].startswith(root + "/") and SCOPE.search(e["file"])]
    if not jobs:
        print("torch2_check: nothing to check", file=sys.stderr)
        return 2
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for path, rc, err in pool.map(lambda j: check(*j, include), jobs):
            if rc != 0:
                first = FIRST_ERROR.search(err)
                line = first.group(0) if first else err[:300]
                # The first error may sit in a header the file includes.
                failed.append(line if line.startswith(path + ":") else f"{path}: {line}")
                sys.stderr.write(err)
    version = ""
    vfile = os.path.join(torch2, "VERSION")
    if os.path.exists(vfile):
        version = " " + open(vfile).read().strip()
    if failed:
        print(f"fails to compile against LibTorch{version}:\n  " +
              "\n  ".join(failed), file=sys.stderr)
        return 1
    print(f"compiles against LibTorch{version}: {len(jobs)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
