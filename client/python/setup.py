"""Installs the shotstream Python package outside Bazel:

    pip install ./client/python        # needs protoc + grpc_python_plugin, or grpcio-tools
    pip install --no-build-isolation --no-index ./client/python   # offline, Debian's setuptools

The build step generates shotstream/v1/shotstream_pb2*.py from the .proto: the copy an
sdist carries (proto/ beside this file), else the repository's proto/shotstream/v1/.
Runtime needs only grpcio, protobuf and numpy."""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))


def version():
    """The one version string, src/shotstream/_version.py."""
    scope = {}
    with open(os.path.join(HERE, "src", "shotstream", "_version.py")) as f:
        exec(f.read(), scope)
    return scope["__version__"]

PROTO = "shotstream/v1/shotstream.proto"
VENDORED = os.path.join(HERE, "proto")  # in an sdist
REPO_PROTO = os.path.join(HERE, "..", "..", "proto")


def proto_root():
    for root in (VENDORED, REPO_PROTO):
        if os.path.isfile(os.path.join(root, PROTO)):
            return os.path.abspath(root)
    raise SystemExit(f"shotstream: {PROTO} not found in {VENDORED} or {REPO_PROTO}")


class SdistWithProto(sdist):
    """An sdist that builds outside the repository: the .proto goes in with it."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        dst = os.path.join(base_dir, "proto", os.path.dirname(PROTO))
        os.makedirs(dst, exist_ok=True)
        shutil.copy(os.path.join(proto_root(), PROTO), dst)


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        # Absolute: protoc runs in the proto folder (a relative build/lib was looked for
        # there, and pip install failed with "build/lib/: No such file or directory").
        out = os.path.abspath(self.build_lib)
        os.makedirs(os.path.join(out, "shotstream", "v1"), exist_ok=True)
        root = proto_root()
        if shutil.which("protoc") and shutil.which("grpc_python_plugin"):
            cmd = ["protoc", f"-I{root}", f"--python_out={out}", f"--grpc_python_out={out}",
                   f"--plugin=protoc-gen-grpc_python={shutil.which('grpc_python_plugin')}", PROTO]
        else:
            cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{root}",
                   f"--python_out={out}", f"--grpc_python_out={out}", PROTO]
        subprocess.check_call(cmd, cwd=root)
        with open(os.path.join(out, "shotstream", "v1", "__init__.py"), "w") as f:
            f.write("# Generated gRPC stubs of shotstream.v1.\n")


setup(
    name="shotstream",
    version=version(),
    description="Stream seismic shot gathers from a shotstream server into numpy",
    package_dir={"": "src"},
    packages=["shotstream"],
    package_data={"shotstream": ["py.typed"]},
    python_requires=">=3.9",
    install_requires=["grpcio", "protobuf", "numpy"],
    extras_require={"torch": ["torch"]},
    cmdclass={"build_py": BuildWithStubs, "sdist": SdistWithProto},
)
