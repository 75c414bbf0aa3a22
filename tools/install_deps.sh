#!/usr/bin/env bash
# Installs the Debian packages that the build, the demo and the tests need.
#   tools/install_deps.sh           everything: build, tests, benchmarks, the image test
#   tools/install_deps.sh --build   only what `bazel build //deploy:deb` needs (the image's
#                                   build stage: no test, benchmark or Node.js packages)
# Idempotent: packages already present are skipped; `apt-get update` runs only when needed.
set -euo pipefail
BUILD_PKGS=(
  bazel-bootstrap
  g++ pkg-config
  dpkg-dev  # dpkg-shlibdeps, for the .deb's Depends:
  python3   # Bazel's Python toolchain and deploy/make_deb.py
  python3-dev pybind11-dev  # the Python extension (shotstream._native): pkg-config python3, pybind11
  # Every library the WORKSPACE's system_libs resolves with pkg-config (all of them are
  # looked up when the workspace loads, the test frameworks included).
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev nlohmann-json3-dev libcivetweb-dev libisal-dev
  libblosc-dev libzfp-dev  # the LOSSLESS and ZFP encodings; Zarr's codecs (server and client)
  libzstd-dev liblz4-dev   # Zarr's codecs; the encoding benchmark's baselines
  libhdf5-dev              # HDF5 sources (server)
)
TEST_PKGS=(
  iperf3 clang-14 libclang-rt-14-dev
  python3-grpcio python3-protobuf python3-numpy python3-segyio python3-pytest python3-yaml python3-matplotlib
  python3-torch  # the torch adapter, tested on the CPU
  python3-xarray python3-dask python3-distributed  # shotstream.xarray on a LocalCluster
  python3-pip python3-venv python3-setuptools python3-wheel  # pip install into a fresh venv
  cmake  # //tests:install_test builds a CMake project against the installed client
  python3-blosc python3-zfpy  # the grpcio path decodes them
  python3-h5py  # tests write HDF5 files with it; the sources benchmark's baseline
  python3-zarr python3-numcodecs  # tests write Zarr v2 stores with it; the Zarr benchmark's baseline
  prometheus  # //tests:prometheus_test scrapes a server; promtool checks the shipped rules
  podman runc debootstrap uidmap  # tools/image_test.py builds and runs the container image
)
build_only=false
[[ "${1:-}" == "--build" ]] && build_only=true
PKGS=("${BUILD_PKGS[@]}")
$build_only || PKGS+=("${TEST_PKGS[@]}")
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
if ((${#missing[@]})); then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
$build_only && exit 0
# Node.js and the npm packages of tests/js (zarrita: an independent Zarr v3 writer and
# reader; @grpc/grpc-js: a client written from the proto alone), pinned by its lockfile.
if ! command -v npm >/dev/null; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
js="$(dirname "$0")/../tests/js"
if [[ ! -d "$js/node_modules" || "$js/package-lock.json" -nt "$js/node_modules" ]]; then
  (cd "$js" && npm ci --no-audit --no-fund --loglevel=error) && touch "$js/node_modules"
fi
