// Decode throughput per core against a plain memcpy of the same bytes (the limit).
//   bazel run -c opt //segy:sample_format_benchmark
#include <cstring>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "segy/sample_format.h"

namespace shotstream::segy {
namespace {

constexpr size_t kSamples = 480 * 4000;  // one 7.68 MB shot

std::vector<uint8_t> RandomBytes(size_t n, bool ibm) {
  std::mt19937 rng(1);
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; i += 4) {
    uint32_t w = rng();
    if (ibm) w = (w & 0x80ffffffu) | ((64 + (rng() % 8)) << 24);  // plausible exponents
    else w = (w & 0x807fffffu) | ((120u + rng() % 16) << 23);
    w = __builtin_bswap32(w);
    std::memcpy(&b[i], &w, 4);
  }
  return b;
}

void BM_Memcpy(benchmark::State& state) {
  std::vector<uint8_t> src = RandomBytes(kSamples * 4, false);
  std::vector<float> dst(kSamples);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * src.size());
}
BENCHMARK(BM_Memcpy);

void Decode(benchmark::State& state, SampleFormat format, ByteOrder order, bool ibm) {
  const int bps = BytesPerSample(static_cast<int>(format));
  std::vector<uint8_t> src = RandomBytes(kSamples * bps + 8, ibm);
  std::vector<float> dst(kSamples);
  for (auto _ : state) {
    DecodeSamples(src.data(), kSamples, format, order, dst.data());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kSamples * 4);  // float32 bytes produced
}

void BM_IeeeBigEndian(benchmark::State& s) {
  Decode(s, SampleFormat::kIeeeFloat32, ByteOrder::kBigEndian, false);
}
void BM_IeeeLittleEndian(benchmark::State& s) {
  Decode(s, SampleFormat::kIeeeFloat32, ByteOrder::kLittleEndian, false);
}
void BM_IbmBigEndian(benchmark::State& s) {
  Decode(s, SampleFormat::kIbmFloat32, ByteOrder::kBigEndian, true);
}
void BM_Int16BigEndian(benchmark::State& s) {
  Decode(s, SampleFormat::kInt16, ByteOrder::kBigEndian, false);
}
void BM_Int32BigEndian(benchmark::State& s) {
  Decode(s, SampleFormat::kInt32, ByteOrder::kBigEndian, false);
}
BENCHMARK(BM_IeeeBigEndian);
BENCHMARK(BM_IeeeLittleEndian);
BENCHMARK(BM_IbmBigEndian);
BENCHMARK(BM_Int16BigEndian);
BENCHMARK(BM_Int32BigEndian);

}  // namespace
}  // namespace shotstream::segy

BENCHMARK_MAIN();
