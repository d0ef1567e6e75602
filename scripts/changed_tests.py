#!/usr/bin/env python3
"""Which test binaries a change can break first: the fast loop's selection.

    changed_tests.py BUILD_DIR ROOT [REF]
    changed_tests.py --sources ROOT [REF]

A change is the files that differ from REF (default HEAD: what is not
committed yet; when nothing is, the last commit), untracked files
included. A test binary is chosen when
  - its own source, or a tests/*.h it includes, changed;
  - it includes a changed header, or the header of a changed source
    (common/fed/aggregate.cc: common/fed/aggregate.h), itself or through a
    tests/*.h: the unit tests of what changed;
  - its source names a changed file's path (the tests of scripts, configs
    and docs read them by name).
Tests that only link the changed code are not chosen: nearly every test
links common/fed, so that would be the whole suite; it runs them.
Prints one `NAME reason` line a chosen binary, on stdout; says what the
change was on stderr. With --sources, prints instead the changed C++
sources of common/, server/, client/ and cli/ (a header stands for the
source of the same name), one absolute path a line, for the two source
checks. Run by scripts/test.sh --changed.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def git(root, *args):
    r = subprocess.run(["git", "-C", root, *args], capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"changed_tests: `git {' '.join(args)}` in {root} failed: "
                 f"{r.stderr.strip()}")
    return [l for l in r.stdout.splitlines() if l]


def changed_sources(root, files):
    out = set()
    for f in files:
        if not f.startswith(("common/", "server/", "client/", "cli/")):
            continue
        src = f[:-2] + ".cc" if f.endswith(".h") else f
        if src.endswith(".cc") and os.path.exists(os.path.join(root, src)):
            out.add(os.path.join(root, src))
    return sorted(out)


def changed_files(root, ref):
    files = git(root, "diff", "--name-only", ref)
    files += git(root, "ls-files", "--others", "--exclude-standard")
    what = f"changed since {ref}"
    if not files and ref == "HEAD":
        files = git(root, "diff", "--name-only", "HEAD~1", "HEAD")
        what = "the last commit"
    return sorted(set(files)), what


def read(path):
    return open(path, errors="replace").read() if os.path.exists(path) else ""


def includes(root, src):
    """The project headers src includes, and those its tests/*.h include."""
    direct = INCLUDE.findall(read(src))
    out = set(direct)
    for h in direct:
        if h.startswith("tests/"):
            out |= set(INCLUDE.findall(read(os.path.join(root, h))))
    return out


def reason(root, name, files):
    src = os.path.join(root, "tests", name + ".cc")
    rel = f"tests/{name}.cc"
    inc = includes(root, src)
    for f in files:
        header = f[:-3] + ".h" if f.endswith(".cc") else f
        if f == rel or (f.startswith("tests/") and f in inc):
            return f"its source {f} changed"
        if header in inc:
            return f"includes {header}"
    text = read(src)
    for f in files:
        if f in text:
            return f"names {f}"
    return None


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "--sources":
        root = os.path.realpath(sys.argv[2])
        files, _ = changed_files(root, sys.argv[3] if len(sys.argv) > 3 else "HEAD")
        print("\n".join(changed_sources(root, files)))
        return 0
    build, root = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    ref = sys.argv[3] if len(sys.argv) > 3 else "HEAD"
    files, what = changed_files(root, ref)
    print(f"changed_tests: {len(files)} file(s), {what}: "
          + (", ".join(files[:8]) + (" ..." if len(files) > 8 else "")),
          file=sys.stderr)
    names = [l.split()[0] for l in open(os.path.join(build, "test_labels.txt"))
             if l.strip()]
    for name in names:
        why = reason(root, name, files)
        if why:
            print(f"{name} {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
