#!/usr/bin/env python3
"""Compiles the LibTorch-using sources against LibTorch 2.x's headers.

    torch2_check.py COMPILE_COMMANDS_JSON ROOT TORCH2_DIR [FILE...]

The build uses Debian 12's LibTorch 1.13; GPU machines run 2.x, whose
headers declare less through the ones the project includes (at::NoGradGuard
was the first casualty) and which needs C++20. This runs `g++ -std=gnu++20
-fsyntax-only` with each file's defines and include paths from the compile
database, LibTorch's include folders swapped for TORCH2_DIR's (a `dpkg -x`
of sid's libtorch-dev, scripts/fetch_libtorch2.sh), two files at a time,
over every source of common/data, common/learn, common/learn_stacked,
server/round, client/ and server/coordinator*.cc, server/run_history.cc
(or over FILE..., which need
not be in the database: those that are not take the flags of
common/learn/train.cc). Files whose includes reach LibTorch's operators
are checked with 2.x's <ATen/ATen.h> precompiled, made once a run (and
only when some file is checked). A file that passed is remembered by the
SHA-256 of its preprocessed text, its flags and g++'s version, in
$SHEFL_TORCH2_CACHE (default ~/.cache/shefl/torch2; "off": none), and is
not compiled again while all three stay the same (pass_cache.py).
Exits 1 naming each file that fails and its first
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
import tempfile
import threading

import pass_cache
from include_closure import reaches

SCOPE = re.compile(r"/(common/data|common/learn|common/learn_stacked|server/round"
                   r"|client)/[^/]+\.cc$"
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
            # The build's precompiled header (cmake/pch.cmake) is 1.13's.
            if not (a in ("-isystem", "-I") and torch_include(args[i + 1])
                    or a == "-include" and "cmake_pch" in args[i + 1]):
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


# A translation unit that reaches LibTorch's operators (<ATen/ATen.h>,
# <ATen/Functions.h>, or any <torch/...>, which include <ATen/ATen.h>)
# spends most of its 10-20 s there; those get 2.x's <ATen/ATen.h>
# precompiled, made once a run with the flags of common/learn/train.cc.
# Nothing more: 2.x's <torch/nn/module.h> declares at::NoGradGuard, which
# <ATen/ATen.h> alone does not, so precompiling it would let through the
# very mistake this check was made for (torch2_test holds that).
PCH_HEADERS = ("ATen/ATen.h",)


def heavy(name):
    return name in ("ATen/ATen.h", "ATen/Functions.h") or name.startswith("torch/")


def defines(flags):
    return sorted(f for i, f in enumerate(flags)
                  if f.startswith("-D") or (i and flags[i - 1] == "-D"))


def make_pch(entry, torch2_include, workdir):
    """Precompiles 2.x's PCH_HEADERS with entry's flags; returns the
    -include arguments that use it and the -D set it holds for, or None
    when g++ fails (the files are then checked without it)."""
    header = os.path.join(workdir, "torch2_aten.h")
    with open(header, "w") as f:
        f.writelines(f"#include <{h}>\n" for h in PCH_HEADERS)
    flags = flags_of(entry, torch2_include)
    r = subprocess.run(["g++", "-x", "c++-header", *flags, header, "-o",
                        header + ".gch"], cwd=entry["directory"],
                       capture_output=True, text=True,
                       env={**os.environ, "LC_ALL": "C"})
    if r.returncode != 0:
        sys.stderr.write("torch2_check: no precompiled header (checking without):\n"
                         + r.stderr[:2000])
        return None
    return ["-include", header, "-Winvalid-pch"], defines(flags)


def check(entry, path, torch2_include, pch=None, root="", cache=None):
    """(path, exit code, stderr). `pch`: a function that makes the
    precompiled header once and returns it (or None); `cache`: (folder,
    g++'s version) for passes, or None."""
    flags = flags_of(entry, torch2_include)
    key = (pass_cache.passed_key(["g++", "-E", "-P"], entry["directory"], path,
                                 flags, cache[1], root) if cache else None)
    if pass_cache.remembered(cache and cache[0], key):
        return path, 0, ""
    made = pch() if pch else None
    if made and defines(flags) == made[1] and reaches(path, root, heavy):
        flags = made[0] + flags
    cmd = ["g++", "-fsyntax-only", *flags, path]
    # LC_ALL=C: plain quotes in g++'s messages, whatever the caller's locale.
    r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True,
                       text=True, env={**os.environ, "LC_ALL": "C"})
    if r.returncode == 0:
        pass_cache.remember(cache and cache[0], key)
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
    model = next(e for e in db if e["file"].endswith("common/learn/train.cc"))
    failed = []
    with tempfile.TemporaryDirectory(prefix="torch2_check.") as workdir, \
            concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        lock, made = threading.Lock(), []

        def pch():
            with lock:
                if not made:
                    made.append(make_pch(model, include, workdir))
                return made[0]
        folder = pass_cache.cache_dir("torch2", "SHEFL_TORCH2_CACHE")
        cache = (folder, pass_cache.compiler_version("g++")) if folder else None
        results = list(pool.map(lambda j: check(*j, include, pch, root, cache), jobs))
        for path, rc, err in results:
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
