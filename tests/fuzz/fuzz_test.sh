#!/usr/bin/env bash
# fuzz_test.sh FUZZER CORPUS_DIR: runs one fuzz target on a copy of its seed corpus.
# Built with --config=fuzz (libFuzzer, ASan + UBSan) it fuzzes for FUZZ_SECONDS (10 s);
# otherwise it replays the corpus once. Fails on a crash; the input is kept in
# $TEST_UNDECLARED_OUTPUTS_DIR (bazel-testlogs/.../test.outputs).
set -euo pipefail
fuzzer=$1
corpus=$2
work=${TEST_TMPDIR:-$(mktemp -d)}/corpus
artifacts=${TEST_UNDECLARED_OUTPUTS_DIR:-$work/..}
mkdir -p "$work"
cp "$corpus"/* "$work/"
"$fuzzer" -max_total_time="${FUZZ_SECONDS:-10}" -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$work" 2>&1 | tail -n 25
