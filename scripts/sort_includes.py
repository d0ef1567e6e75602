#!/usr/bin/env python3
"""Sorts the #include blocks of the tree's C++ files as .clang-format says.

Only the include lines at the top of each file are given to clang-format
(its --lines), so nothing else of a file changes.

    scripts/sort_includes.py [--check] [FILE...]

Without files: every tracked .h, .cc and .cu file. --check changes nothing
and exits 1, naming the files whose includes are out of order.
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s')
# What may stand between the includes of one top region.
BETWEEN = re.compile(r'^\s*($|//|#\s*(if|ifdef|ifndef|else|elif|endif|define)\b)')


def clang_format():
    for name in ("clang-format-14", "clang-format"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("sort_includes: clang-format not found "
             "(apt-get install clang-format)")


def include_range(lines):
    """1-based first and last line of the top include region, or None."""
    first = last = None
    for n, line in enumerate(lines, 1):
        if INCLUDE.match(line):
            first = first or n
            last = n
        elif first is not None and not BETWEEN.match(line):
            break
    return (first, last) if first else None


def formatted(tool, path):
    text = path.read_text()
    span = include_range(text.splitlines())
    if span is None:
        return text
    out = subprocess.run(
        [tool, f"--lines={span[0]}:{span[1]}",
         f"--style=file:{ROOT / '.clang-format'}", f"--assume-filename={path}"],
        input=text, capture_output=True, text=True, check=True, cwd=ROOT)
    return out.stdout


def tracked():
    out = subprocess.run(["git", "ls-files", "*.h", "*.cc", "*.cu"],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return [ROOT / p for p in out.stdout.split()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    tool = clang_format()
    files = [pathlib.Path(f).resolve() for f in args.files] or tracked()
    stale = []
    for path in files:
        new = formatted(tool, path)
        if new == path.read_text():
            continue
        stale.append(path.relative_to(ROOT) if ROOT in path.parents else path)
        if not args.check:
            path.write_text(new)
    if args.check and stale:
        print("includes out of order (scripts/sort_includes.py sorts them):",
              file=sys.stderr)
        for p in stale:
            print(f"  {p}", file=sys.stderr)
        return 1
    if not args.check:
        print(f"sort_includes: {len(stale)} files changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
