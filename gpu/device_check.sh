#!/usr/bin/env bash
# Builds the GPU checks as self-contained binaries (static cudart: they run where only the
# NVIDIA driver is installed) into gpu/out/, then runs them when a GPU is present.
#
#   gpu/device_check.sh build   # here (no GPU needed): compile and link
#   gpu/device_check.sh run     # on the GPU machine: run the tests and the benchmark
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
if [[ $mode == build || $mode == all ]]; then
  bazel build -c opt --config=cuda --config=cuda_static \
    //gpu:device_check //gpu:device_stager_test //gpu:pinned_buffer_pool_test
  mkdir -p gpu/out
  for t in device_check device_stager_test pinned_buffer_pool_test; do
    install -m 755 "bazel-bin/gpu/$t" gpu/out/
  done
  echo "built gpu/out/{device_check,device_stager_test,pinned_buffer_pool_test}"
fi
if [[ $mode == run || $mode == all ]]; then
  nvidia-smi -L 2>/dev/null || echo "nvidia-smi: no GPU listed"
  gpu/out/pinned_buffer_pool_test
  gpu/out/device_stager_test
  gpu/out/device_check
fi
