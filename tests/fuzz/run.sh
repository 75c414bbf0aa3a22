#!/usr/bin/env bash
# Builds one libFuzzer target with clang (ASan + UBSan) and runs it for a bounded time
# on its seed corpus (a copy, so the tree is not changed).
#
#   tests/fuzz/run.sh segy_header 60      # fuzzers: segy_header, trace_decode, catalog_load
#
# Exit 0 when nothing was found; libFuzzer's report and the crashing input otherwise.
set -euo pipefail
name=${1:?usage: run.sh segy_header|trace_decode|catalog_load|request_validation [seconds]}
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${FUZZ_OUT:-$(mktemp -d)}
CXX=${CXX_FUZZ:-$(command -v clang++ || command -v clang++-14)}
srcs=(server/segy/segy_file.cc segy/sample_format.cc segy/trace_header.cc
      server/common/mapping_guard.cc)
extra=()
case $name in
  catalog_load)
    srcs+=(server/catalog/catalog_store.cc server/catalog/catalog.cc)
    extra=($(pkg-config --libs libisal)) ;;
  request_validation)
    # The request message: generated here with Debian's protoc.
    mkdir -p "$out/gen"
    (cd "$root" && protoc -Iproto --cpp_out="$out/gen" proto/shotstream/v1/shotstream.proto)
    srcs+=(server/catalog/catalog_store.cc server/catalog/catalog.cc
           server/io/coalescing_reader.cc server/dataset/dataset.cc server/dataset/dataset_entry.cc
           server/service/request_validation.cc "$out/gen/shotstream/v1/shotstream.pb.cc")
    extra=(-I"$out/gen" $(pkg-config --libs protobuf libisal)) ;;
esac
libs=$(pkg-config --libs absl_status absl_statusor absl_strings absl_str_format \
  absl_synchronization absl_time zlib)
(cd "$root" && $CXX -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -I. "tests/fuzz/${name}_fuzzer.cc" "${srcs[@]}" \
  "${extra[@]}" $libs -o "$out/${name}_fuzzer")
mkdir -p "$out/corpus"
cp "$here/corpus/$name/"* "$out/corpus/"
cd "$out"
"./${name}_fuzzer" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$out/" corpus 2>&1 | tail -n 25
echo "fuzzer $name: ${seconds}s, no crash (artifacts would be in $out)"
