// What a chunk of stored traces costs to hand to gRPC and to let go: EncodeStoredChunk
// for a 3.84 MB shot of 480 traces as a SEG-Y file holds them (a 240-byte header before
// each), and the release of its slices (as gRPC does once the write is done).
//   bazel run -c opt //wire:chunk_codec_benchmark
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "wire/chunk_codec.h"

namespace shotstream::wire {
namespace {

void BM_EncodeStoredChunk(benchmark::State& state) {
  const size_t n_traces = static_cast<size_t>(state.range(0)), trace_bytes = 8000;
  std::string file(n_traces * (240 + trace_bytes), '\1');
  std::vector<const uint8_t*> traces;
  for (size_t t = 0; t < n_traces; ++t) {
    traces.push_back(reinterpret_cast<const uint8_t*>(file.data()) + t * (240 + trace_bytes) + 240);
  }
  auto keep = std::make_shared<int>(0);
  v1::ShotChunk meta;
  meta.set_shot_id(1);
  meta.set_n_traces(static_cast<uint32_t>(n_traces));
  for (auto _ : state) {
    grpc::ByteBuffer bb = EncodeStoredChunk(meta, traces, trace_bytes, keep);
    benchmark::DoNotOptimize(bb.Length());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n_traces));
}
BENCHMARK(BM_EncodeStoredChunk)->Arg(480);

}  // namespace
}  // namespace shotstream::wire
