"""The C++ client as every build takes it, written once. Loaded by Bazel (each package's
`native_sources` and `public_headers` filegroups are made from it) and read as plain
Python by client/python/setup.py (the extension a pip install compiles) and
deploy/install.py (the installed headers, pkg-config and CMake files): plain lists of
strings, valid Starlark and Python both.

The extension's sources: the C++ client and what it compiles in, by path from the
repository root (the pybind11 binding first). //tests:pip_install_test builds the
extension from exactly this list, outside Bazel, and runs the Python tests on it."""

NATIVE_SOURCES = [
    "client/python/native/shotstream_native.cc",
    "client/client.cc",
    "wire/chunk_codec.cc",
    "common/crc32_copy.cc",
    "wire/chunk_plan.cc",
    "wire/job_token.cc",
    "client/shot_assembler.cc",
    "wire/sample_encoding.cc",
    "wire/blosc_frame.cc",
    "wire/sample_kernels.cc",
    "segy/sample_format.cc",
    "gpu/pinned_buffer_pool.cc",
    "gpu/cuda_runtime.cc",
]

NATIVE_HEADERS = [
    "client/client.h",
    "client/grpc_tuning.h",
    "client/retry_budget.h",
    "common/crc32.h",
    "common/crc32_copy.h",
    "common/malloc_tuning.h",
    "common/sample_buffer.h",
    "common/thread_scratch.h",
    "common/status_macros.h",
    "gpu/cuda_runtime.h",
    "gpu/pinned_buffer_pool.h",
    "segy/sample_format.h",
    "wire/chunk_codec.h",
    "wire/chunk_cut.h",
    "wire/chunk_plan.h",
    "wire/job_token.h",
    "client/shot_assembler.h",
    "wire/encoding.h",
    "wire/encoding_proto.h",
    "wire/sample_encoding.h",
    "wire/blosc_frame.h",
    "wire/sample_kernels.h",
]

# Installed under PREFIX/include/shotstream/ and included as "shotstream/<path>"; inside
# the workspace the same spelling comes from include_prefix on each library.
PUBLIC_HEADERS = [
    "client/client.h",
    "client/epoch_shots.h",
    "client/grpc_tuning.h",
    "common/epoch_shots.h",
    "gpu/cuda_runtime.h",
    "gpu/device_stager.h",
    "gpu/pinned_buffer_pool.h",
]

# pkg-config modules (Debian's -dev packages): what the public headers include and the
# library links, then what only a static link (and the extension) needs besides.
PKG_CONFIG_REQUIRES = [
    "grpc++",
    "protobuf",
    "absl_status",
    "absl_statusor",
    "absl_strings",
    "absl_str_format",
    "absl_synchronization",
    "absl_time",
]
PKG_CONFIG_PRIVATE = ["libisal", "zlib", "blosc", "liblz4"]

# Libraries without a pkg-config file: (link flag, header, Debian package).
PLAIN_PRIVATE = [("-lzfp", "zfp.h", "libzfp-dev")]

# What a pip build of the extension needs on Debian, besides Python's own packages.
DEBIAN_BUILD_PACKAGES = [
    "g++",
    "pkg-config",
    "libgrpc++-dev",
    "libprotobuf-dev",
    "protobuf-compiler-grpc",
    "libabsl-dev",
    "libisal-dev",
    "zlib1g-dev",
    "libblosc-dev",
    "liblz4-dev",
    "libzfp-dev",
    "pybind11-dev",
    "python3-dev",
]

def files_under(package, paths):
    """The paths of `package`'s own files among `paths`, relative to the package."""
    prefix = package + "/"
    return [p[len(prefix):] for p in paths if p.startswith(prefix) and "/" not in p[len(prefix):]]
