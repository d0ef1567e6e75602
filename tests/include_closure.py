"""What a source reaches through its #include lines, for the source checks
(torch2_check.py, thread_safety_check.py): they give a precompiled header
only to the files that would parse its headers anyway."""
import os
import re

INCLUDE = re.compile(r'^#include ([<"])([^>"]+)[>"]', re.M)


def reaches(path, root, wanted, seen=None):
    """Whether a <...> include that wanted(name) accepts is in path's
    #include closure, following the project's own "..." headers (from
    root, or beside the file: the generated protocol's are not followed,
    `wanted` sees their names)."""
    seen = set() if seen is None else seen
    if path in seen or not os.path.exists(path):
        return False
    seen.add(path)
    for kind, name in INCLUDE.findall(open(path, errors="replace").read()):
        if wanted(name):
            return True
        if kind == '"' and reaches(os.path.join(root, name), root, wanted, seen):
            return True
    return False
