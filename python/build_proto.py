"""Generates shefl_client/_proto/{shefl,health}_pb2{,_grpc}.py from proto/
with Debian's protoc and grpc_python_plugin (they match python3-protobuf
and python3-grpcio). The one place the Python modules are made: `pip
install ./python` runs it through BuildPy (pyproject.toml's cmdclass),
and the CMake build (proto/CMakeLists.txt) runs it as a script so that a
built checkout imports the package straight from python/.

grpc_python_plugin writes `import shefl_pb2 as shefl__pb2`, an absolute
import that works only with the output folder on sys.path; each such line
becomes `from . import shefl_pb2 as shefl__pb2`, so the modules live in
the shefl_client._proto subpackage and nothing edits sys.path.

    python3 build_proto.py [--proto-dir DIR] [--out DIR] [--protoc P] [--plugin P]
"""
from __future__ import annotations

import argparse
import filecmp
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_OUT = os.path.join("shefl_client", "_proto")
_ABSOLUTE = re.compile(r"^import (\w+_pb2) as (\w+)$", re.MULTILINE)


class ProtoError(RuntimeError):
    """A missing tool or .proto file, said so that the fix is plain."""


def relative_imports(source: str) -> str:
    """Generated code with `import x_pb2 as y` made `from . import x_pb2 as y`."""
    return _ABSOLUTE.sub(r"from . import \1 as \2", source)


def generate(proto_dir: str, out: str, protoc: str = "", plugin: str = "") -> list[str]:
    """Writes the modules into `out` (only those whose text changed, so a
    rebuild leaves timestamps alone); returns their names."""
    protos = sorted(glob.glob(os.path.join(proto_dir, "*.proto")))
    if not protos:
        raise ProtoError("no .proto files in %s (set SHEFL_PROTO_DIR)" % proto_dir)
    protoc = protoc or shutil.which("protoc") or ""
    plugin = plugin or shutil.which("grpc_python_plugin") or ""
    if not protoc or not plugin:
        raise ProtoError("protoc and grpc_python_plugin are needed "
                         "(apt install protobuf-compiler protobuf-compiler-grpc)")
    os.makedirs(out, exist_ok=True)
    names = []
    with tempfile.TemporaryDirectory(prefix="shefl-proto-") as tmp:
        subprocess.check_call([protoc, "-I", proto_dir, "--python_out=" + tmp,
                               "--grpc_python_out=" + tmp,
                               "--plugin=protoc-gen-grpc_python=" + plugin] + protos)
        for name in sorted(os.listdir(tmp)):
            path = os.path.join(tmp, name)
            with open(path, encoding="utf-8") as f:
                text = relative_imports(f.read())
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            target = os.path.join(out, name)
            if not os.path.exists(target) or not filecmp.cmp(path, target, shallow=False):
                # Whole files only: another build may be importing them.
                shutil.copyfile(path, target + ".tmp")
                os.replace(target + ".tmp", target)
            names.append(name)
    return names


try:
    from setuptools.command.build_py import build_py
except ImportError:  # run as a script (CMake): BuildPy is not needed then
    pass
else:
    class BuildPy(build_py):
        """setuptools' build_py, then the generated modules into the build."""

        def run(self) -> None:
            super().run()
            proto_dir = os.environ.get("SHEFL_PROTO_DIR", os.path.join(HERE, "..", "proto"))
            try:
                generate(proto_dir, os.path.join(self.build_lib, PACKAGE_OUT))
            except ProtoError as e:
                raise SystemExit("shefl_client: %s" % e) from None


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proto-dir", default=os.path.join(HERE, "..", "proto"))
    ap.add_argument("--out", default=os.path.join(HERE, PACKAGE_OUT))
    ap.add_argument("--protoc", default="")
    ap.add_argument("--plugin", default="")
    a = ap.parse_args(argv)
    try:
        generate(a.proto_dir, a.out, a.protoc, a.plugin)
    except ProtoError as e:
        sys.stderr.write("build_proto.py: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
