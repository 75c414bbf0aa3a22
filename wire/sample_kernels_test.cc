#include "wire/sample_kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::wire::kernels {
namespace {

// Each test runs on both paths (the AVX2 one only where the CPU has it) and compares them.
class KernelsTest : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    ForcePath(GetParam());
    if (ActivePath() != GetParam()) {
      GTEST_SKIP() << PathName(GetParam()) << ": not on this CPU";
    }
  }
  void TearDown() override { ForcePath(Path::kAuto); }
};

// Lengths that exercise every vector width and tail.
constexpr size_t kLengths[] = {0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 100, 1001};

std::vector<float> Noise(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST_P(KernelsTest, StatsMatchAPlainLoop) {
  for (size_t n : kLengths) {
    auto v = Noise(n, 100, 1);
    if (n > 3) v[n - 2] = -1e4f;  // the peak, negative, in the tail
    float peak = 0;
    double sum = 0;
    for (float x : v) {
      peak = std::max(peak, std::fabs(x));
      sum += double{x} * x;
    }
    const SampleStats s = Stats(v.data(), n);
    EXPECT_EQ(FromBits(s.peak_bits), peak) << n;
    EXPECT_EQ(PeakBits(v.data(), n), s.peak_bits) << n;
    EXPECT_NEAR(s.sum_squares, sum, 1e-9 * sum) << n;
  }
}

TEST_P(KernelsTest, PeakBitsSeesNanAndInfinityAnywhere) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::infinity()}) {
    for (size_t n : {1, 9, 33}) {
      for (size_t at = 0; at < n; ++at) {
        auto v = Noise(n, 1, 2);
        v[at] = bad;
        EXPECT_GE(PeakBits(v.data(), n), kNonFiniteBits) << n << " " << at;
        EXPECT_GE(Stats(v.data(), n).peak_bits, kNonFiniteBits) << n << " " << at;
      }
    }
  }
  const float denormal = std::numeric_limits<float>::denorm_min();
  std::vector<float> tiny(20, -denormal);
  EXPECT_EQ(FromBits(PeakBits(tiny.data(), tiny.size())), denormal);
}

// Into a destination at any float's offset (the AVX2 paths stream from its first 32-byte
// boundary): every sample written, nothing around it.
TEST_P(KernelsTest, DecodersWriteExactlyTheirSamplesAtAnyOffset) {
  for (size_t n : kLengths) {
    std::vector<uint8_t> q(2 * n);
    for (size_t i = 0; i < n; ++i) {
      const int16_t v = static_cast<int16_t>(i * 37 % 65536 - 32768);
      std::memcpy(q.data() + 2 * i, &v, 2);
    }
    for (int k = 0; k < 20; ++k) {  // each offset past a 64-byte boundary, each decoder
      const size_t offset = 4 * (k / 2);
      const bool dequantize = k % 2 == 1;
      alignas(64) static uint8_t out[4 * 1001 + 128];
      std::memset(out, 0xCD, sizeof(out));
      float* dst = reinterpret_cast<float*>(out + offset);
      if (dequantize) {
        Dequantize(q.data(), n, 2, 0.5f, dst);  // zigzag: z = 2|q| - (q < 0)
      } else {
        Int16ToFloat(q.data(), n, 0.5f, dst);
      }
      for (size_t i = 0; i < n; ++i) {
        int16_t v;
        std::memcpy(&v, q.data() + 2 * i, 2);
        const uint32_t z = static_cast<uint16_t>(v);
        const float want = dequantize ? static_cast<float>(static_cast<int32_t>(z >> 1) ^
                                                           -static_cast<int32_t>(z & 1)) * 0.5f
                                      : v * 0.5f;
        float got;
        std::memcpy(&got, out + offset + 4 * i, 4);
        ASSERT_EQ(got, want) << n << " " << offset << " " << i << " " << dequantize;
      }
      for (size_t b = 0; b < sizeof(out); ++b) {
        if (b < offset || b >= offset + 4 * n) {
          ASSERT_EQ(out[b], 0xCD) << n << " " << offset << " " << b;
        }
      }
    }
  }
}

TEST_P(KernelsTest, Int16RoundsToNearestEvenAndClamps) {
  for (size_t n : kLengths) {
    auto v = Noise(n, 1000, 3);
    if (n > 4) {
      v[0] = 2.5f;    // ties go to even: 2
      v[1] = -3.5f;   // -4
      v[2] = 40000;   // clamped to 32767
      v[3] = -40000;  // clamped to -32767
    }
    std::vector<uint8_t> q(2 * n + 1, 0xAB);
    ScaleToInt16(v.data(), n, 1.0f, q.data() + 1);  // unaligned on purpose
    std::vector<float> back(n);
    Int16ToFloat(q.data() + 1, n, 2.0f, back.data());
    for (size_t i = 0; i < n; ++i) {
      const float want = std::clamp(std::nearbyint(v[i]), -32767.0f, 32767.0f);
      int16_t got;
      std::memcpy(&got, q.data() + 1 + 2 * i, 2);
      ASSERT_EQ(got, static_cast<int16_t>(want)) << n << " " << i;
      ASSERT_EQ(back[i], want * 2.0f) << n << " " << i;
    }
    if (n > 4) {
      int16_t q0, q1;
      std::memcpy(&q0, q.data() + 1, 2);
      std::memcpy(&q1, q.data() + 3, 2);
      EXPECT_EQ(q0, 2);
      EXPECT_EQ(q1, -4);
    }
  }
}

TEST_P(KernelsTest, QuantizeRoundTripsZigzagAtEveryWidth) {
  const struct {
    int width;
    float scale;
  } cases[] = {{1, 30}, {2, 8000}, {4, 1e6}};
  for (const auto& c : cases) {
    for (size_t n : kLengths) {
      auto v = Noise(n, c.scale, 4);
      for (float& x : v) x = std::clamp(x, -4 * c.scale, 4 * c.scale);
      const float inv = c.width == 1 ? 1.0f : c.width == 2 ? 0.5f : 1.0f;
      std::vector<uint8_t> z(size_t(c.width) * n + 3);
      Quantize(v.data(), n, inv, c.width, z.data() + 3);
      std::vector<float> back(n);
      Dequantize(z.data() + 3, n, c.width, 1.0f / inv, back.data());
      for (size_t i = 0; i < n; ++i) {
        const int32_t q = static_cast<int32_t>(std::nearbyint(v[i] * inv));
        const uint32_t want = (static_cast<uint32_t>(q) << 1) ^ static_cast<uint32_t>(q >> 31);
        uint32_t got = 0;
        std::memcpy(&got, z.data() + 3 + size_t(c.width) * i, c.width);
        ASSERT_EQ(got, want) << c.width << " " << n << " " << i;
        ASSERT_EQ(back[i], static_cast<float>(q) * (1.0f / inv)) << c.width << " " << i;
      }
    }
  }
}

TEST(KernelsPathsTest, BothPathsGiveTheSameBytes) {
  ForcePath(Path::kAvx2);
  if (ActivePath() != Path::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  const auto v = Noise(4099, 700, 5);
  auto run = [&](Path p) {
    ForcePath(p);
    std::vector<uint8_t> out(2 * v.size() + 4 * v.size());
    ScaleToInt16(v.data(), v.size(), 32767.0f / 4000, out.data());
    Quantize(v.data(), v.size(), 0.25f, 4, out.data() + 2 * v.size());
    const SampleStats s = Stats(v.data(), v.size());
    return std::make_pair(out, std::make_pair(s.peak_bits, s.sum_squares));
  };
  const auto avx2 = run(Path::kAvx2);
  const auto portable = run(Path::kPortable);
  ForcePath(Path::kAuto);
  EXPECT_EQ(avx2.first, portable.first);
  EXPECT_EQ(avx2.second.first, portable.second.first);
  EXPECT_EQ(avx2.second.second, portable.second.second);  // the same sum, bit for bit
}

// The bit shuffle by its definition: bit k of byte j of element i at bit i % 8 of byte
// (8 j + k) n / 8 + i / 8.
std::vector<uint8_t> BitShuffleByDefinition(const std::vector<uint8_t>& in, size_t n) {
  std::vector<uint8_t> out(4 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 8; ++k) {
        if ((in[4 * i + j] >> k) & 1) out[(8 * j + k) * (n / 8) + i / 8] |= 1 << (i % 8);
      }
    }
  }
  return out;
}

TEST_P(KernelsTest, BitShuffleFollowsItsDefinitionAndUnshuffleUndoesIt) {
  std::mt19937 rng(7);
  // Multiples of 8 elements around the AVX2 step of 64, and LOSSLESS's block (32256).
  for (size_t n : {0, 8, 16, 56, 64, 72, 120, 128, 136, 512, 1000, 32256}) {
    std::vector<uint8_t> in(4 * n);
    for (auto& b : in) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> shuffled(4 * n + 1, 0xee);
    BitShuffle4(in.data(), n, shuffled.data());
    EXPECT_EQ(shuffled[4 * n], 0xee) << n << ": wrote past the end";
    shuffled.resize(4 * n);
    EXPECT_EQ(shuffled, BitShuffleByDefinition(in, n)) << n;
    // The unshuffle streams its stores to a 32-byte aligned destination: both kinds.
    std::vector<uint8_t> space(4 * n + 64 + 4 + 1, 0xee);
    const size_t base = (32 - reinterpret_cast<uintptr_t>(space.data()) % 32) % 32;
    for (size_t offset : {0, 4}) {
      uint8_t* back = space.data() + base + offset;
      BitUnshuffle4(shuffled.data(), n, back);
      EXPECT_EQ(back[4 * n], 0xee) << n << ": wrote past the end";
      EXPECT_EQ(std::memcmp(back, in.data(), 4 * n), 0) << n << " at offset " << offset;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, KernelsTest,
                         ::testing::Values(Path::kPortable, Path::kAvx2, Path::kAvx2Gfni),
                         [](const auto& info) { return TestName(info.param); });

}  // namespace
}  // namespace shotstream::wire::kernels
