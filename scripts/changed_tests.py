#!/usr/bin/env python3
"""Which test binaries a change can break: the fast loop's selection.

    changed_tests.py BUILD_DIR ROOT [REF]

A change is the files that differ from REF (default HEAD: what is not
committed yet; when nothing is, the last commit), untracked files
included. A test binary is chosen when it is built from a changed source,
or from a source that includes a changed header (ninja's header
dependencies, `ninja -t deps`, and build.ninja's edges without the
order-only ones), or when its source names a
changed file's path (the tests of scripts, configs and docs read them by
name). Prints one `NAME reason` line a chosen binary, on stdout; says
what the change was on stderr. Run by scripts/test.sh --changed.
"""
import os
import subprocess
import sys


def git(root, *args):
    r = subprocess.run(["git", "-C", root, *args], capture_output=True,
                       text=True, check=True)
    return [l for l in r.stdout.splitlines() if l]


def changed_files(root, ref):
    files = git(root, "diff", "--name-only", ref)
    files += git(root, "ls-files", "--others", "--exclude-standard")
    what = f"changed since {ref}"
    if not files and ref == "HEAD":
        files = git(root, "diff", "--name-only", "HEAD~1", "HEAD")
        what = "the last commit"
    return sorted(set(files)), what


def ninja(build, *args):
    r = subprocess.run(["ninja", "-C", build, *args], capture_output=True,
                       text=True, check=True)
    return r.stdout.splitlines()


def build_graph(build):
    """output -> its explicit and implicit inputs, from build.ninja. Order-only
    inputs (after ||) are left out: every test waits for the three
    binaries to be built, but is not built from them."""
    text = open(os.path.join(build, "build.ninja")).read().replace("$\n", "")
    graph = {}
    for line in text.splitlines():
        if not line.startswith("build "):
            continue
        outs, _, rest = line[6:].replace("$ ", "\0").replace("$:", "\1").partition(": ")
        ins = rest.split("||")[0].replace("|", " ").split()[1:]  # [0]: the rule
        fix = lambda p: os.path.realpath(os.path.join(
            build, p.replace("\0", " ").replace("\1", ":")))
        for out in outs.split("|")[0].split():
            graph[fix(out)] = [fix(i) for i in ins]
    return graph


def inputs_of(graph, target):
    seen, todo = set(), [target]
    while todo:
        t = todo.pop()
        for i in graph.get(t, ()):
            if i not in seen:
                seen.add(i)
                todo.append(i)
    return seen


def objects_by_header(build):
    """header or source path (real) -> the object files that depend on it."""
    out, obj = {}, None
    for line in ninja(build, "-t", "deps"):
        if line and not line[0].isspace():
            obj = os.path.realpath(os.path.join(build, line.split(":")[0]))
        elif line.strip() and obj:
            dep = os.path.realpath(os.path.join(build, line.strip()))
            out.setdefault(dep, set()).add(obj)
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    build, root = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    ref = sys.argv[3] if len(sys.argv) > 3 else "HEAD"
    files, what = changed_files(root, ref)
    print(f"changed_tests: {len(files)} file(s), {what}: "
          + (", ".join(files[:8]) + (" ..." if len(files) > 8 else "")),
          file=sys.stderr)
    changed = {os.path.realpath(os.path.join(root, f)) for f in files}
    deps = objects_by_header(build)
    graph = build_graph(build)
    reached = set(changed)
    for f in changed:
        reached |= deps.get(f, set())
    names = [l.split()[0] for l in open(os.path.join(build, "test_labels.txt"))
             if l.strip()]
    for name in names:
        src = os.path.join(root, "tests", name + ".cc")
        text = open(src).read() if os.path.exists(src) else ""
        named = [f for f in files if f in text]
        if named:
            print(f"{name} names {named[0]}")
            continue
        inputs = inputs_of(graph, os.path.join(build, "bin", name))
        hit = sorted(inputs & reached)
        if hit:
            print(f"{name} builds from {os.path.relpath(hit[0], root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
