#!/usr/bin/env python3
"""clang-14's thread-safety analysis over the build's sources.

    thread_safety_check.py COMPILE_COMMANDS_JSON ROOT [FILE...]

Runs `clang++-14 -fsyntax-only -Wthread-safety
-Werror=thread-safety-analysis` with each file's own defines, include
paths and standard from the compile database, two files at a time, over
every non-test source of server/ and client/ and those of common/ that
hold a lock (or over FILE...,
which need not be in the database: those that are not take the flags of
server/coordinator.cc). Exits 1 listing the files that fail, after their
diagnostics. Run by thread_safety_test.
"""
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys


def flags_of(entry):
    args = entry.get("arguments") or shlex.split(entry["command"])
    keep, i = [], 1  # args[0] is the compiler (or ccache)
    while i < len(args):
        a = args[i]
        if a in ("-o", "-MF", "-MT", "-c"):
            i += 2 if a != "-c" else 1
            continue
        if a in ("-isystem", "-I", "-D", "-include"):
            keep += [a, args[i + 1]]
            i += 2
            continue
        if re.match(r"^-(I|D|std=|isystem)", a):
            keep.append(a)
        i += 1
    return keep


def wanted(root, path):
    """server/ and client/ whole; of common/, the files that hold a lock
    (the .cc or its header names a Mutex): the rest has nothing to check,
    and each file costs seconds of LibTorch headers."""
    m = re.match(re.escape(root) + r"/(server|client|common)/", path)
    if not m or path.endswith("_test.cc") or path.endswith("_main.cc"):
        return False
    if m.group(1) != "common":
        return True
    for f in (path, path[:-3] + ".h"):
        if os.path.exists(f) and "Mutex" in open(f).read():
            return True
    return False


def check(clang, entry, path):
    cmd = [clang, "-fsyntax-only", "-Wthread-safety",
           "-Werror=thread-safety-analysis", "-Wno-unknown-warning-option",
           *flags_of(entry), path]
    r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True,
                       text=True)
    return path, r.returncode, r.stderr


def main():
    db_path, root = sys.argv[1], os.path.realpath(sys.argv[2])
    extra = sys.argv[3:]
    clang = shutil.which("clang++-14") or shutil.which("clang++")
    if not clang:
        print("thread_safety_check: no clang++-14", file=sys.stderr)
        return 2
    db = json.load(open(db_path))
    jobs = []
    if extra:
        by_file = {e["file"]: e for e in db}
        model = next(e for e in db if e["file"].endswith("server/coordinator.cc"))
        jobs = [(by_file.get(os.path.realpath(f), model), os.path.realpath(f))
                for f in extra]
    else:
        jobs = [(e, e["file"]) for e in db if wanted(root, e["file"])]
    if not jobs:
        print("thread_safety_check: nothing to check", file=sys.stderr)
        return 2
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for path, rc, err in pool.map(lambda j: check(clang, *j), jobs):
            if rc != 0:
                failed.append(path)
                sys.stderr.write(err)
    if failed:
        print("thread-safety analysis failed in:\n  " + "\n  ".join(failed),
              file=sys.stderr)
        return 1
    print(f"thread-safety analysis passed: {len(jobs)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
