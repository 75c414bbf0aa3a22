// CRC-32 throughput on one 7.68 MB shot: ISA-L (what shotstream uses) against zlib; and
// the client's receive step (a 1 MiB chunk, as gRPC hands it over, byte-swapped into a
// shot's buffer with its CRC-32): one pass (common/crc32_copy) against the CRC-32 then the
// swap over 64 KiB pieces (what the client did before).
//   bazel run -c opt //common:crc32_benchmark
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/crc32.h"
#include "common/crc32_copy.h"
#include "segy/sample_format.h"

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

// A shot's chunk CRC-32 joined from its 480 traces' kept CRC-32s (the server's zero-copy
// sends): the Joiner's tables against zlib's combine.
std::vector<uint32_t> TraceCrcs() {
  std::vector<uint32_t> v(480);
  std::mt19937 rng(2);
  for (uint32_t& c : v) c = static_cast<uint32_t>(rng());
  return v;
}

void BM_JoinTraceCrcsTables(benchmark::State& state) {
  const std::vector<uint32_t> crcs = TraceCrcs();
  for (auto _ : state) {
    const Crc32Joiner join(16000);  // made per shot, as the server does
    uint32_t crc = 0;
    for (uint32_t c : crcs) crc = join.Append(crc, c);
    benchmark::DoNotOptimize(crc);
  }
}
BENCHMARK(BM_JoinTraceCrcsTables);

void BM_JoinTraceCrcsZlib(benchmark::State& state) {
  const std::vector<uint32_t> crcs = TraceCrcs();
  for (auto _ : state) {
    const uLong op = crc32_combine_gen64(16000);
    uint32_t crc = 0;
    for (uint32_t c : crcs) crc = static_cast<uint32_t>(crc32_combine_op(crc, c, op));
    benchmark::DoNotOptimize(crc);
  }
}
BENCHMARK(BM_JoinTraceCrcsZlib);

// A 7.68 MB shot received as 1 MiB chunks, each written where the last left off, as in
// the client: `step` copies one chunk and returns its CRC-32.
template <typename Step>
void ReceiveShot(benchmark::State& state, Step step) {
  const std::vector<uint8_t> wire = Shot();
  std::vector<uint8_t> shot(wire.size());
  constexpr size_t kChunk = 1 << 20;
  std::vector<uint8_t> chunk(kChunk);  // gRPC's buffer, refilled as the socket would
  for (auto _ : state) {
    uint32_t crc = 0;
    for (size_t at = 0; at < wire.size(); at += kChunk) {
      const size_t n = std::min(kChunk, wire.size() - at);
      std::memcpy(chunk.data(), wire.data() + at, n);
      crc ^= step(chunk.data(), n, shot.data() + at);
    }
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * wire.size());
}

void BM_ReceiveSwapOnePass(benchmark::State& state) {
  ReceiveShot(state, [](const uint8_t* src, size_t n, uint8_t* dst) {
    return SwapCopyCrc32(0, src, n, dst);
  });
}
BENCHMARK(BM_ReceiveSwapOnePass);

void BM_ReceiveSwapTwoPasses(benchmark::State& state) {
  ReceiveShot(state, [](const uint8_t* src, size_t n, uint8_t* dst) {
    uint32_t crc = 0;
    constexpr size_t kPiece = 64 * 1024;
    for (size_t done = 0; done < n; done += kPiece) {
      const size_t k = std::min(kPiece, n - done);
      crc = Crc32(crc, src + done, k);
      segy::DecodeSamples(src + done, k / 4, segy::SampleFormat::kIeeeFloat32,
                          segy::ByteOrder::kBigEndian, reinterpret_cast<float*>(dst + done));
    }
    return crc;
  });
}
BENCHMARK(BM_ReceiveSwapTwoPasses);

// The same chunks without a copy: the floor both stand on.
void BM_ReceiveRefillOnly(benchmark::State& state) {
  ReceiveShot(state, [](const uint8_t*, size_t, uint8_t*) { return 0u; });
}
BENCHMARK(BM_ReceiveRefillOnly);

}  // namespace
}  // namespace shotstream

BENCHMARK_MAIN();
