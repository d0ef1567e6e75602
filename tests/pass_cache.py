"""Remembering which files passed a per-file compiler check.

A check whose verdict depends only on a file's preprocessed text, the
flags and the compiler (torch2_check.py's g++ against LibTorch 2.x,
thread_safety_check.py's clang analysis) need not run again on the same
input: preprocessing is a tenth of the check. A pass is remembered as an
empty file named by the SHA-256 of the compiler's version, the flags and
the preprocessed text, with the checkout's and the build's folders named
by role so that a pass holds in another clone of the same sources.
Failures are never remembered. The folder is $<ENV> when set ("off":
none), else ~/.cache/shefl/<name>.
"""
import hashlib
import os
import subprocess


def cache_dir(name, env):
    d = os.environ.get(env, "")
    if d == "off":
        return None
    return d or os.path.join(os.path.expanduser("~"), ".cache", "shefl", name)


def compiler_version(compiler):
    return subprocess.run([compiler, "--version"], capture_output=True,
                          text=True).stdout


def passed_key(preprocess, directory, path, flags, version, root):
    """The name of a pass of `path`, or None when `preprocess` (the
    compiler's argv up to the flags, e.g. ["g++", "-E", "-P"]) fails: then
    the file is checked."""
    r = subprocess.run([*preprocess, *flags, path], cwd=directory,
                       capture_output=True, env={**os.environ, "LC_ALL": "C"})
    if r.returncode != 0:
        return None
    places = [(directory, "<build>"), (root, "<root>")]

    def plain(text):
        for where, role in places:
            text = text.replace(where.encode(), role.encode())
        return text
    h = hashlib.sha256(version.encode())
    h.update(plain("\0".join(flags).encode()))
    h.update(plain(r.stdout))
    return h.hexdigest()


def remembered(folder, key):
    return bool(folder and key and os.path.exists(os.path.join(folder, key)))


def remember(folder, key):
    if not (folder and key):
        return
    try:
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, key), "w").close()
    except OSError:
        pass  # no cache: the next run checks it again
