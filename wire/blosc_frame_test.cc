#include "wire/blosc_frame.h"

#include <blosc.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "wire/sample_kernels.h"

namespace shotstream::wire {
namespace {

// libblosc (Debian's c-blosc 1.21, its own bit shuffle) is the independent reader and
// writer: every frame written here must read back through it, and every frame it writes
// must read back here, bit for bit. Each test runs on both of our kernel paths.
class BloscFrameTest : public ::testing::TestWithParam<kernels::Path> {
 protected:
  void SetUp() override {
    kernels::ForcePath(GetParam());
    if (kernels::ActivePath() != GetParam()) {
      GTEST_SKIP() << kernels::PathName(GetParam()) << ": not on this CPU";
    }
  }
  void TearDown() override {
    kernels::ForcePath(kernels::Path::kAuto);
    blosc_set_splitmode(BLOSC_FORWARD_COMPAT_SPLIT);
  }
};

enum class Data { kRecording16, kFullPrecision, kZeros, kRandomBits };

// (a) what LOSSLESS meets: IEEE samples of a 16-bit recording (integers times a gain), or
// full-precision events and noise; (b) the extremes: zeros, and random bits LZ4 cannot
// shrink (NaNs among them).
std::vector<float> Samples(Data kind, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0, 1);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const float wave = 3000.0f * std::sin(0.01f * static_cast<float>(i % 2000)) *
                       std::exp(-0.001f * static_cast<float>(i % 2000));
    switch (kind) {
      case Data::kRecording16:
        v[i] = std::nearbyint(wave + 30 * noise(rng)) * 0.125f;
        break;
      case Data::kFullPrecision:
        v[i] = wave + noise(rng);
        break;
      case Data::kZeros:
        v[i] = 0;
        break;
      case Data::kRandomBits: {
        const uint32_t bits = static_cast<uint32_t>(rng());
        std::memcpy(&v[i], &bits, 4);
        break;
      }
    }
  }
  return v;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

std::vector<uint8_t> Write(const std::vector<float>& v) {
  std::vector<uint8_t> frame(BloscFrameBound(4 * v.size()));
  frame.resize(WriteBloscFrame(v.data(), v.size(), 5, frame.data()));
  return frame;
}

// Element counts around the 8-element shuffle unit, the AVX2 step (64), our 126 KiB block
// (32256) and libblosc's 128 KiB, and one shot of 480 traces x 2000 samples.
constexpr size_t kCounts[] = {0, 1, 7, 8, 9, 63, 64, 65, 1000, 32255, 32256, 32257, 32768, 100003,
                              960000};

TEST_P(BloscFrameTest, LibbloscReadsWhatWeWriteAndSoDoWe) {
  for (Data kind : {Data::kRecording16, Data::kFullPrecision, Data::kZeros, Data::kRandomBits}) {
    for (size_t n : kCounts) {
      const std::string what = "data " + std::to_string(static_cast<int>(kind)) + ", n " +
                               std::to_string(n);
      const auto v = Samples(kind, n, static_cast<uint32_t>(n));
      const auto frame = Write(v);
      ASSERT_LE(frame.size(), BloscFrameBound(4 * n)) << what;
      size_t nbytes = 0, cbytes = 0, blocksize = 0;
      blosc_cbuffer_sizes(frame.data(), &nbytes, &cbytes, &blocksize);
      EXPECT_EQ(nbytes, 4 * n) << what;
      EXPECT_EQ(cbytes, frame.size()) << what;

      std::vector<float> theirs(n, -1.0f), ours(n, -1.0f);
      EXPECT_EQ(blosc_decompress_ctx(frame.data(), theirs.data(), 4 * n, 1),
                static_cast<int>(4 * n))
          << what;
      EXPECT_TRUE(SameBits(theirs, v)) << what;
      ASSERT_TRUE(ReadBloscFrame(frame.data(), frame.size(), n, ours.data()).ok()) << what;
      EXPECT_TRUE(SameBits(ours, v)) << what;
    }
  }
}

TEST_P(BloscFrameTest, WeReadWhatLibbloscWrites) {
  struct Setting {
    const char* compressor;
    int shuffle;
    int level;
    int splitmode;
  };
  const Setting settings[] = {
      {"lz4", BLOSC_BITSHUFFLE, 5, BLOSC_FORWARD_COMPAT_SPLIT},  // what the server sent before
      {"lz4", BLOSC_BITSHUFFLE, 1, BLOSC_NEVER_SPLIT},
      {"lz4", BLOSC_BITSHUFFLE, 9, BLOSC_ALWAYS_SPLIT},
      {"lz4", BLOSC_NOSHUFFLE, 5, BLOSC_FORWARD_COMPAT_SPLIT},
      {"lz4", BLOSC_SHUFFLE, 5, BLOSC_FORWARD_COMPAT_SPLIT},  // libblosc reads these
      {"blosclz", BLOSC_BITSHUFFLE, 5, BLOSC_FORWARD_COMPAT_SPLIT},
      {"zstd", BLOSC_BITSHUFFLE, 1, BLOSC_FORWARD_COMPAT_SPLIT},
  };
  for (const Setting& s : settings) {
    blosc_set_splitmode(s.splitmode);
    for (Data kind : {Data::kRecording16, Data::kRandomBits}) {
      for (size_t n : kCounts) {
        const std::string what = std::string(s.compressor) + " shuffle " +
                                 std::to_string(s.shuffle) + " level " + std::to_string(s.level) +
                                 ", data " + std::to_string(static_cast<int>(kind)) + ", n " +
                                 std::to_string(n);
        const auto v = Samples(kind, n, 11);
        std::vector<uint8_t> frame(4 * n + BLOSC_MAX_OVERHEAD);
        const int size = blosc_compress_ctx(s.level, s.shuffle, 4, 4 * n, v.data(), frame.data(),
                                            frame.size(), s.compressor, 0, 1);
        ASSERT_GT(size, 0) << what;
        std::vector<float> got(n, -1.0f);
        // libblosc 1.21 cannot read back a block it was made to split (ALWAYS_SPLIT) below
        // 128 elements; neither can we, and we say so.
        if (blosc_decompress_ctx(frame.data(), got.data(), 4 * n, 1) != static_cast<int>(4 * n)) {
          EXPECT_EQ(s.splitmode, BLOSC_ALWAYS_SPLIT) << what;
          EXPECT_EQ(ReadBloscFrame(frame.data(), static_cast<size_t>(size), n, got.data()).code(),
                    absl::StatusCode::kDataLoss)
              << what;
          continue;
        }
        ASSERT_TRUE(ReadBloscFrame(frame.data(), static_cast<size_t>(size), n, got.data()).ok())
            << what;
        EXPECT_TRUE(SameBits(got, v)) << what;
      }
    }
  }
}

TEST_P(BloscFrameTest, CompressesAsWellAsLibblosc) {
  const auto v = Samples(Data::kRecording16, 960000, 3);
  const auto frame = Write(v);
  std::vector<uint8_t> theirs(4 * v.size() + BLOSC_MAX_OVERHEAD);
  const int size = blosc_compress_ctx(5, BLOSC_BITSHUFFLE, 4, 4 * v.size(), v.data(),
                                      theirs.data(), theirs.size(), "lz4", 0, 1);
  ASSERT_GT(size, 0);
  EXPECT_LT(static_cast<double>(frame.size()), 1.03 * size)
      << "ours " << frame.size() << " bytes, libblosc's " << size;
  EXPECT_LT(frame.size(), 4 * v.size() / 2) << "a 16-bit recording shrinks to under half";
}

TEST_P(BloscFrameTest, BrokenFramesAreDataLossNamingWhy) {
  const size_t n = 100003;
  const auto v = Samples(Data::kRecording16, n, 5);
  const auto frame = Write(v);
  std::vector<float> got(n);
  auto read = [&](std::vector<uint8_t> f, size_t size) {
    return ReadBloscFrame(f.data(), size, n, got.data());
  };
  EXPECT_EQ(read(frame, 10).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(read(frame, frame.size() - 1).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadBloscFrame(frame.data(), frame.size(), n - 1, got.data()).code(),
            absl::StatusCode::kDataLoss);
  {
    auto f = frame;  // a block start past the end
    f[16 + 4] = 0xff, f[16 + 5] = 0xff, f[16 + 6] = 0xff;
    const absl::Status s = read(f, f.size());
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("block 1 starts at byte"), std::string::npos) << s;
  }
  {
    auto f = frame;  // the first stream's size past the end
    const size_t start = f[16] | f[17] << 8 | f[18] << 16;
    f[start + 3] = 0x7f;
    const absl::Status s = read(f, f.size());
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("has a stream of"), std::string::npos) << s;
  }
  // Any byte of the frame changed: an error or samples, never a read or write out of
  // bounds (the sanitizer build runs this too).
  std::mt19937 rng(9);
  for (int i = 0; i < 300; ++i) {
    auto f = frame;
    f[rng() % f.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    (void)read(f, f.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, BloscFrameTest,
                         ::testing::Values(kernels::Path::kPortable, kernels::Path::kAvx2,
                                           kernels::Path::kAvx2Gfni),
                         [](const auto& info) { return kernels::TestName(info.param); });

}  // namespace
}  // namespace shotstream::wire
