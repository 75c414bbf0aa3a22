// Codec speed (bytes of float32 per second, one core) and ratio on the benchmark's two
// kinds of data: IEEE samples of 16-bit recordings (int16 values as float32, with at most
// 16 significant bits) and full-precision noise; a memcpy of the shot as the ceiling; the
// encodings' AVX2 and portable paths. c-blosc's settings against Zstd and LZ4 alone, and
// its LZ4 levels 1, 5 and 9 both ways (docs/encodings.md).
//   bazel run -c opt //wire:sample_encoding_benchmark
#include <blosc.h>
#include <lz4.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "wire/blosc_frame.h"
#include "wire/sample_encoding.h"
#include "wire/sample_kernels.h"

namespace {

constexpr uint32_t kTraces = 480, kSamples = 2000;  // one 3.84 MB shot

const std::vector<float>& Data(bool sixteen_bits) {
  static const auto make = [](bool q) {
    std::mt19937 rng(1);
    std::normal_distribution<float> noise(0, 1);
    std::vector<float> v(size_t{kTraces} * kSamples);
    for (float& x : v) {
      x = noise(rng) * 1000;
      if (q) x = std::round(std::fmin(std::fmax(x, -32767.0f), 32767.0f));
    }
    return v;
  };
  static const std::vector<float> q16 = make(true), full = make(false);
  return sixteen_bits ? q16 : full;
}

void Report(benchmark::State& state, size_t raw, size_t packed) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * raw));
  state.counters["ratio"] = static_cast<double>(raw) / static_cast<double>(packed);
}

void BM_Blosc(benchmark::State& state, const char* codec, int shuffle, int level) {
  const auto& v = Data(state.range(0));
  const size_t raw = v.size() * 4;
  std::vector<uint8_t> out(raw + BLOSC_MAX_OVERHEAD);
  int size = 0;
  for (auto _ : state) {
    size = blosc_compress_ctx(level, shuffle, 4, raw, v.data(), out.data(), out.size(), codec, 0, 1);
    benchmark::DoNotOptimize(size);
  }
  Report(state, raw, size);
}

// c-blosc's decode of what BM_Blosc's bit shuffle and LZ4 at `level` wrote: the baseline
// of `lossless`, which writes and reads the same frames itself (BM_Codec/lossless).
void BM_BloscLevelDecode(benchmark::State& state, int level) {
  const auto& v = Data(state.range(0));
  const size_t raw = v.size() * 4;
  std::vector<uint8_t> packed(raw + BLOSC_MAX_OVERHEAD);
  const int size = blosc_compress_ctx(level, BLOSC_BITSHUFFLE, 4, raw, v.data(), packed.data(),
                                      packed.size(), "lz4", 0, 1);
  std::vector<float> out(v.size());
  for (auto _ : state) {
    benchmark::DoNotOptimize(blosc_decompress_ctx(packed.data(), out.data(), raw, 1));
  }
  Report(state, raw, size);
}

void BM_BloscDecode(benchmark::State& state) { BM_BloscLevelDecode(state, 5); }

// lossless's frame writer at LZ4 acceleration `acceleration` (lossless uses 5, c-blosc's
// for level 5): what each step of it trades in speed for ratio.
void BM_LosslessAcceleration(benchmark::State& state, int acceleration) {
  const auto& v = Data(state.range(0));
  std::vector<uint8_t> out(shotstream::wire::BloscFrameBound(v.size() * 4));
  size_t size = 0;
  for (auto _ : state) {
    size = shotstream::wire::WriteBloscFrame(v.data(), v.size(), acceleration, out.data());
    benchmark::DoNotOptimize(size);
  }
  Report(state, v.size() * 4, size);
}

void BM_Zstd(benchmark::State& state) {
  const auto& v = Data(state.range(0));
  const size_t raw = v.size() * 4;
  std::vector<uint8_t> out(ZSTD_compressBound(raw));
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  size_t size = 0;
  for (auto _ : state) {
    size = ZSTD_compressCCtx(ctx, out.data(), out.size(), v.data(), raw, 1);
    benchmark::DoNotOptimize(size);
  }
  ZSTD_freeCCtx(ctx);
  Report(state, raw, size);
}

void BM_Lz4(benchmark::State& state) {
  const auto& v = Data(state.range(0));
  const int raw = static_cast<int>(v.size() * 4);
  std::vector<char> out(LZ4_compressBound(raw));
  int size = 0;
  for (auto _ : state) {
    size = LZ4_compress_default(reinterpret_cast<const char*>(v.data()), out.data(), raw,
                                static_cast<int>(out.size()));
    benchmark::DoNotOptimize(size);
  }
  Report(state, raw, size);
}

// The ceiling: a copy of the shot (the bytes a codec reads, written once).
void BM_Memcpy(benchmark::State& state) {
  const auto& v = Data(state.range(0));
  std::vector<float> out(v.size());
  for (auto _ : state) {
    std::memcpy(out.data(), v.data(), v.size() * 4);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  Report(state, v.size() * 4, v.size() * 4);
}

// Arg 2 (after the data): 2 AVX2 with GFNI (lossless's bit shuffle), 1 the AVX2 path
// (SHOTSTREAM_SIMD=avx2), 0 the portable one (SHOTSTREAM_SIMD=portable).
void ForcePath(benchmark::State& state) {
  namespace k = shotstream::wire::kernels;
  k::ForcePath(state.range(1) == 2 ? k::Path::kAvx2Gfni : state.range(1) ? k::Path::kAvx2 : k::Path::kPortable);
  state.SetLabel(std::string(k::PathName(k::ActivePath())));
}

void BM_Codec(benchmark::State& state, shotstream::wire::Encoding e) {
  ForcePath(state);
  const auto& v = Data(state.range(0));
  const double accuracy = 1e-3 * shotstream::wire::Rms(v.data(), v.size());
  size_t size = 0;
  for (auto _ : state) {
    auto b = shotstream::wire::EncodeSamples(e, v.data(), kTraces, kSamples, accuracy);
    size = b->size();
    benchmark::DoNotOptimize(b);
  }
  Report(state, v.size() * 4, size);
  shotstream::wire::kernels::ForcePath(shotstream::wire::kernels::Path::kAuto);
}

void BM_CodecDecode(benchmark::State& state, shotstream::wire::Encoding e) {
  ForcePath(state);
  const auto& v = Data(state.range(0));
  const double accuracy = 1e-3 * shotstream::wire::Rms(v.data(), v.size());
  auto b = shotstream::wire::EncodeSamples(e, v.data(), kTraces, kSamples, accuracy);
  std::vector<float> out(v.size());
  for (auto _ : state) {
    benchmark::DoNotOptimize(shotstream::wire::DecodeSamples(e, 0, false, b->data(), b->size(),
                                                             kTraces, kSamples, out.data()));
  }
  Report(state, v.size() * 4, b->size());
  shotstream::wire::kernels::ForcePath(shotstream::wire::kernels::Path::kAuto);
}

// Arg 1: 16 significant bits (data b); 0: full-precision noise (data c).
BENCHMARK_CAPTURE(BM_Blosc, lz4_shuffle_5, "lz4", BLOSC_SHUFFLE, 5)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_Blosc, lz4_bitshuffle_5, "lz4", BLOSC_BITSHUFFLE, 5)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_Blosc, lz4_bitshuffle_1, "lz4", BLOSC_BITSHUFFLE, 1)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_Blosc, lz4_bitshuffle_9, "lz4", BLOSC_BITSHUFFLE, 9)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_BloscLevelDecode, lz4_bitshuffle_1, 1)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_BloscLevelDecode, lz4_bitshuffle_9, 9)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_Blosc, zstd_shuffle_1, "zstd", BLOSC_SHUFFLE, 1)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_Blosc, zstd_bitshuffle_1, "zstd", BLOSC_BITSHUFFLE, 1)->Arg(1)->Arg(0);
BENCHMARK(BM_BloscDecode)->Arg(1)->Arg(0);
BENCHMARK(BM_Zstd)->Arg(1)->Arg(0);
BENCHMARK(BM_Lz4)->Arg(1)->Arg(0);
BENCHMARK(BM_Memcpy)->Arg(1);
BENCHMARK_CAPTURE(BM_LosslessAcceleration, accel_1, 1)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_LosslessAcceleration, accel_5, 5)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_LosslessAcceleration, accel_9, 9)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_LosslessAcceleration, accel_17, 17)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_LosslessAcceleration, accel_33, 33)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_LosslessAcceleration, accel_65, 65)->Arg(1)->Arg(0);
BENCHMARK_CAPTURE(BM_Codec, lossless, shotstream::wire::Encoding::kLossless)
    ->Args({1, 2})->Args({0, 2})->Args({1, 1})->Args({0, 1})->Args({1, 0});
BENCHMARK_CAPTURE(BM_CodecDecode, lossless, shotstream::wire::Encoding::kLossless)
    ->Args({1, 2})->Args({0, 2})->Args({1, 1})->Args({0, 1})->Args({1, 0});
BENCHMARK_CAPTURE(BM_Codec, int16, shotstream::wire::Encoding::kInt16)
    ->Args({1, 1})->Args({0, 1})->Args({1, 0});
BENCHMARK_CAPTURE(BM_CodecDecode, int16, shotstream::wire::Encoding::kInt16)
    ->Args({1, 1})->Args({0, 1})->Args({1, 0});
BENCHMARK_CAPTURE(BM_Codec, quantized_1e3, shotstream::wire::Encoding::kQuantized)
    ->Args({1, 1})->Args({0, 1})->Args({1, 0});
BENCHMARK_CAPTURE(BM_CodecDecode, quantized_1e3, shotstream::wire::Encoding::kQuantized)
    ->Args({1, 1})->Args({0, 1})->Args({1, 0});
BENCHMARK_CAPTURE(BM_Codec, zfp_1e3, shotstream::wire::Encoding::kZfp)->Args({1, 1})->Args({0, 1});

}  // namespace
