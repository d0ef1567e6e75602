"""pip install ./python: the shefl_client package, with its gRPC modules
generated from ../proto at build time by Debian's protoc and
grpc_python_plugin (protobuf-compiler, protobuf-compiler-grpc), which match
python3-protobuf and python3-grpcio. Nothing is fetched from an index:

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation ./python
"""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithProto(build_py):
    """Generates shefl_client/_proto/{shefl,health}_pb2{,_grpc}.py."""

    def run(self):
        super().run()
        proto_dir = os.environ.get("SHEFL_PROTO_DIR", os.path.join(HERE, "..", "proto"))
        protos = sorted(glob.glob(os.path.join(proto_dir, "*.proto")))
        if not protos:
            raise SystemExit("shefl_client: no .proto files in %s (set SHEFL_PROTO_DIR)"
                             % proto_dir)
        protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
        if not protoc or not plugin:
            raise SystemExit("shefl_client: protoc and grpc_python_plugin are needed "
                             "(apt install protobuf-compiler protobuf-compiler-grpc)")
        out = os.path.join(self.build_lib, "shefl_client", "_proto")
        os.makedirs(out, exist_ok=True)
        subprocess.check_call([protoc, "-I", proto_dir, "--python_out=" + out,
                               "--grpc_python_out=" + out,
                               "--plugin=protoc-gen-grpc_python=" + plugin] + protos)


setup(
    name="shefl-client",
    version="0.1.0",
    description="shefl's Python client: join a shefl federation with your own PyTorch model",
    packages=["shefl_client"],
    python_requires=">=3.9",
    # From Debian: python3-torch python3-numpy python3-grpcio python3-protobuf
    # python3-yaml (pandas optional, for shefl_client.results).
    install_requires=["torch", "numpy", "grpcio", "protobuf", "PyYAML"],
    cmdclass={"build_py": BuildWithProto},
)
