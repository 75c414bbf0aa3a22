// CRC-32 throughput on one 7.68 MB shot: ISA-L (what shotstream uses) against zlib.
//   bazel run -c opt //common:crc32_benchmark
#include <zlib.h>

#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/crc32.h"

namespace shotstream {
namespace {

std::vector<uint8_t> Shot() {
  std::vector<uint8_t> b(480 * 4000 * 4);
  std::mt19937 rng(1);
  for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

void BM_Crc32IsaL(benchmark::State& state) {
  const std::vector<uint8_t> b = Shot();
  for (auto _ : state) benchmark::DoNotOptimize(Crc32(0, b.data(), b.size()));
  state.SetBytesProcessed(state.iterations() * b.size());
}
BENCHMARK(BM_Crc32IsaL);

void BM_Crc32Zlib(benchmark::State& state) {
  const std::vector<uint8_t> b = Shot();
  for (auto _ : state) benchmark::DoNotOptimize(crc32_z(0, b.data(), b.size()));
  state.SetBytesProcessed(state.iterations() * b.size());
}
BENCHMARK(BM_Crc32Zlib);

}  // namespace
}  // namespace shotstream

BENCHMARK_MAIN();
