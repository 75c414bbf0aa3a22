#!/usr/bin/env bash
# Installs the Debian packages that the build, the demo and the tests need.
# Idempotent: packages already present are skipped; `apt-get update` runs only when needed.
set -euo pipefail
PKGS=(
  bazel-bootstrap
  g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev nlohmann-json3-dev libcivetweb-dev libisal-dev
  iperf3 clang-14 libclang-rt-14-dev
  python3 python3-grpcio python3-protobuf python3-numpy python3-segyio python3-pytest python3-yaml python3-matplotlib
  python3-torch  # the torch adapter, tested on the CPU
  python3-pip python3-venv python3-setuptools python3-wheel  # pip install into a fresh venv
  cmake  # //tests:install_test builds a CMake project against the installed client
  libblosc-dev libzfp-dev  # the LOSSLESS and ZFP encodings (server and native client)
  python3-blosc python3-zfpy  # the grpcio path decodes them
  libzstd-dev liblz4-dev  # the encoding benchmark's baselines
  libhdf5-dev  # HDF5 sources (server)
  python3-h5py  # tests write HDF5 files with it; the sources benchmark's baseline
  python3-zarr python3-numcodecs  # tests write Zarr v2 stores with it; the Zarr benchmark's baseline
  prometheus  # //tests:prometheus_test scrapes a server; promtool checks the shipped rules
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Node.js and the npm packages of tests/js (zarrita: an independent Zarr v3 writer
# and reader for //tests:zarr_test), pinned by its package-lock.json.
if ! command -v npm >/dev/null; then
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
js="$(dirname "$0")/../tests/js"
if [[ ! -d "$js/node_modules" || "$js/package-lock.json" -nt "$js/node_modules" ]]; then
  (cd "$js" && npm ci --no-audit --no-fund --loglevel=error) && touch "$js/node_modules"
fi
