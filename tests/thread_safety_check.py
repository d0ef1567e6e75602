#!/usr/bin/env python3
"""clang-14's thread-safety analysis over the build's sources.

    thread_safety_check.py COMPILE_COMMANDS_JSON ROOT [FILE...]

Runs `clang++-14 -fsyntax-only -Wthread-safety
-Werror=thread-safety-analysis` with each file's own defines, include
paths and standard from the compile database, two files at a time, over
every non-test source of server/ and client/ and those of common/ that
hold a lock (or over FILE...,
which need not be in the database: those that are not take the flags of
server/coordinator.cc). The third-party headers are precompiled once a
run (make_pch) for the files that reach LibTorch, gRPC or the protocol.
A file that passed is remembered by the SHA-256 of its preprocessed text,
its flags and clang's version, in $SHEFL_THREAD_SAFETY_CACHE (default
~/.cache/shefl/thread_safety; "off": none), and is not analysed again while
all three stay the same (pass_cache.py).
Exits 1 listing the files that fail, after their diagnostics. Run by thread_safety_test.
"""
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import pass_cache
from include_closure import reaches


def flags_of(entry):
    args = entry.get("arguments") or shlex.split(entry["command"])
    keep, i = [], 1  # args[0] is the compiler (or ccache)
    while i < len(args):
        a = args[i]
        if a in ("-o", "-MF", "-MT", "-c"):
            i += 2 if a != "-c" else 1
            continue
        if a in ("-isystem", "-I", "-D", "-include"):
            if not (a == "-include" and "cmake_pch" in args[i + 1]):
                keep += [a, args[i + 1]]  # the build's PCH is g++'s
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


def make_pch(clang, entry, root, workdir):
    """clang's precompiled header of the third-party headers the sources
    use (cmake/pch/*.h: the standard library, Abseil, LibTorch, gRPC and
    the generated protocol), made with entry's flags (clang takes it for
    files with fewer -D, the torch-free ones). Their 10-20 s of parsing a file
    then load in a fraction of a second; the analysis looks only at the
    project's own code, so what they add to a file does not change it.
    Returns the arguments that use it, or [] when clang fails."""
    header = os.path.join(workdir, "third_party.h")
    with open(header, "w") as f:
        for part in ("common", "torch", "grpc"):
            f.write(f'#include "{root}/cmake/pch/{part}.h"\n')
    flags = flags_of(entry)
    r = subprocess.run([clang, "-x", "c++-header", *flags, header, "-o",
                        header + ".pch"], cwd=entry["directory"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("thread_safety_check: no precompiled header "
                         "(checking without):\n" + r.stderr[:2000])
        return []
    return ["-include-pch", header + ".pch"]


def heavy(name):
    """LibTorch's, gRPC's and the protocol's headers: a file that reaches
    them checks in half the time with the precompiled header; one that
    does not would take twice as long loading it."""
    return (name.startswith(("ATen/", "torch/", "grpcpp/", "grpc/"))
            or name.endswith(".pb.h"))


WARNINGS = ["-Wthread-safety", "-Werror=thread-safety-analysis",
            "-Wno-unknown-warning-option"]


def check(clang, entry, path, pch=(), root="", cache=None):
    """(path, exit code, stderr). `cache`: (folder, clang's version) for
    passes, or None."""
    flags = flags_of(entry)
    key = (pass_cache.passed_key([clang, "-E", "-P"], entry["directory"], path,
                                 WARNINGS + flags, cache[1], root)
           if cache else None)
    if pass_cache.remembered(cache and cache[0], key):
        return path, 0, ""
    if pch and not reaches(path, root, heavy):
        pch = ()
    cmd = [clang, "-fsyntax-only", *WARNINGS, *pch, *flags, path]
    r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True,
                       text=True)
    if r.returncode == 0:
        pass_cache.remember(cache and cache[0], key)
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
    model = next(e for e in db if e["file"].endswith("server/coordinator.cc"))
    failed = []
    with tempfile.TemporaryDirectory(prefix="thread_safety_check.") as workdir, \
            concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        pch = make_pch(clang, model, root, workdir)
        folder = pass_cache.cache_dir("thread_safety", "SHEFL_THREAD_SAFETY_CACHE")
        cache = (folder, pass_cache.compiler_version(clang)) if folder else None
        results = list(pool.map(lambda j: check(clang, *j, pch, root, cache), jobs))
        for path, rc, err in results:
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
