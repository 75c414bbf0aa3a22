#!/usr/bin/env bash
# Runs every fuzzer for a bounded time (FUZZ_SECONDS, default 10 s each); fails on a find.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v clang++ >/dev/null && ! command -v clang++-14 >/dev/null; then
  echo "clang++ not installed (tools/install_deps.sh installs it)"; exit 1
fi
export FUZZ_OUT=${TEST_TMPDIR:-$(mktemp -d)}
for f in segy_header trace_decode catalog_load request_validation; do
  "$here/run.sh" "$f" "${FUZZ_SECONDS:-10}" | tail -n 3
done
