"""Installs the shotstream Python package outside Bazel:

    pip install ./client/python        # needs protoc + grpc_python_plugin, or grpcio-tools

The build step generates shotstream/v1/shotstream_pb2*.py from proto/shotstream/v1/.
Runtime needs only grpcio, protobuf and numpy."""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.join(HERE, "..", "..", "proto")
PROTO = "shotstream/v1/shotstream.proto"


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        out = self.build_lib
        os.makedirs(os.path.join(out, "shotstream", "v1"), exist_ok=True)
        if shutil.which("protoc") and shutil.which("grpc_python_plugin"):
            cmd = ["protoc", f"-I{PROTO_ROOT}", f"--python_out={out}", f"--grpc_python_out={out}",
                   f"--plugin=protoc-gen-grpc_python={shutil.which('grpc_python_plugin')}", PROTO]
        else:
            cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_ROOT}",
                   f"--python_out={out}", f"--grpc_python_out={out}", PROTO]
        subprocess.check_call(cmd, cwd=PROTO_ROOT)
        with open(os.path.join(out, "shotstream", "v1", "__init__.py"), "w") as f:
            f.write("# Generated gRPC stubs of shotstream.v1.\n")


setup(
    name="shotstream",
    version="0.1.0",
    description="Stream seismic shot gathers from a shotstream server into numpy",
    package_dir={"": "src"},
    packages=["shotstream"],
    python_requires=">=3.9",
    install_requires=["grpcio", "protobuf", "numpy"],
    extras_require={"torch": ["torch"]},
    cmdclass={"build_py": BuildWithStubs},
)
