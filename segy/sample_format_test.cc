#include "segy/sample_format.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::segy {
namespace {

// Independent reference: the IBM value computed exactly in long double, then the
// documented rule (truncate below float's normal range, infinity above it).
uint32_t ReferenceIbmToIeee(uint32_t ibm) {
  const bool neg = ibm >> 31;
  const int exp16 = (ibm >> 24) & 0x7f;
  const uint32_t frac = ibm & 0xffffff;
  if (frac == 0) return neg ? 0x80000000u : 0u;
  long double v = std::ldexp(static_cast<long double>(frac), 4 * (exp16 - 64) - 24);
  uint32_t bits;
  if (v > static_cast<long double>(std::numeric_limits<float>::max())) {
    bits = 0x7f800000u;
  } else if (v < static_cast<long double>(std::numeric_limits<float>::min())) {
    // Denormal: truncate to a multiple of 2^-149.
    long double q = std::floor(std::ldexp(v, 149));
    bits = static_cast<uint32_t>(q);
  } else {
    float f = static_cast<float>(v);  // exact: 24 significant bits at most
    std::memcpy(&bits, &f, 4);
  }
  return bits | (neg ? 0x80000000u : 0u);
}

TEST(IbmToIeeeTest, KnownValues) {
  EXPECT_EQ(IbmToFloat(0x00000000u), 0.0f);
  EXPECT_EQ(IbmToFloat(0x41100000u), 1.0f);
  EXPECT_EQ(IbmToFloat(0xC1100000u), -1.0f);
  EXPECT_EQ(IbmToFloat(0x42640000u), 100.0f);
  EXPECT_EQ(IbmToFloat(0xC276A000u), -118.625f);  // the classic example
  EXPECT_EQ(IbmToFloat(0x40800000u), 0.5f);
}

TEST(IbmToIeeeTest, NegativeZeroKeepsSign) {
  const float f = IbmToFloat(0x80000000u);
  EXPECT_EQ(f, 0.0f);
  EXPECT_TRUE(std::signbit(f));
  // A zero fraction with any exponent is zero.
  EXPECT_EQ(IbmToIeeeBits(0x7f000000u), 0u);
}

TEST(IbmToIeeeTest, OverflowIsInfinity) {
  EXPECT_EQ(IbmToFloat(0x7fffffffu), std::numeric_limits<float>::infinity());
  EXPECT_EQ(IbmToFloat(0xffffffffu), -std::numeric_limits<float>::infinity());
}

TEST(IbmToIeeeTest, UnderflowToDenormalThenZero) {
  // 16^-64 * 0.0625 = 2^-260: far below float, -> signed zero.
  EXPECT_EQ(IbmToIeeeBits(0x00100000u), 0u);
  EXPECT_EQ(IbmToIeeeBits(0x80100000u), 0x80000000u);
  // 16^(33-64) * 0.5 = 2^-125 is normal; 16^(32-64)*0.5 = 2^-129 is denormal.
  EXPECT_EQ(IbmToFloat(0x21800000u), std::ldexp(1.0f, -125));
  EXPECT_EQ(IbmToFloat(0x20800000u), std::ldexp(1.0f, -129));
}

TEST(IbmToIeeeTest, BitExactAgainstReferenceOnEveryExponent) {
  std::mt19937 rng(42);
  for (uint32_t exp = 0; exp < 128; ++exp) {
    for (int sign = 0; sign < 2; ++sign) {
      for (int i = 0; i < 2000; ++i) {
        uint32_t frac = rng() & 0xffffff;
        if (i < 24) frac = 1u << i;  // every leading-zero count
        const uint32_t ibm = (uint32_t(sign) << 31) | (exp << 24) | frac;
        ASSERT_EQ(IbmToIeeeBits(ibm), ReferenceIbmToIeee(ibm)) << std::hex << ibm;
      }
    }
  }
}

TEST(IbmToIeeeTest, VectorDecodeEqualsTheScalarRuleOnEveryExponentBothOrders) {
  std::mt19937 rng(11);
  std::vector<uint32_t> words;
  for (uint32_t exp = 0; exp < 128; ++exp) {
    for (int i = 0; i < 300; ++i) {
      uint32_t frac = rng() & 0xffffff;
      if (i < 24) frac = 1u << i;
      if (i == 24) frac = 0;
      words.push_back(((rng() & 1u) << 31) | (exp << 24) | frac);
    }
  }
  for (bool big : {true, false}) {
    std::vector<uint8_t> bytes(words.size() * 4);
    for (size_t i = 0; i < words.size(); ++i) {
      const uint32_t w = big ? __builtin_bswap32(words[i]) : words[i];
      std::memcpy(&bytes[4 * i], &w, 4);
    }
    std::vector<float> out(words.size());
    DecodeSamples(bytes.data(), words.size(), SampleFormat::kIbmFloat32,
                  big ? ByteOrder::kBigEndian : ByteOrder::kLittleEndian, out.data());
    for (size_t i = 0; i < words.size(); ++i) {
      uint32_t got;
      std::memcpy(&got, &out[i], 4);
      ASSERT_EQ(got, IbmToIeeeBits(words[i])) << std::hex << words[i] << " big=" << big;
    }
  }
}

// Blocks holding only words of the exact (vector) path, zeros of both signs and
// zero fractions among them, so that no element falls back to the scalar rule.
TEST(IbmToIeeeTest, VectorPathAloneIsBitExactOnItsWholeRange) {
  std::mt19937 rng(12);
  std::vector<uint32_t> words;
  for (uint32_t exp = 39; exp <= 96; ++exp) {
    for (int i = 0; i < 4000; ++i) {
      uint32_t frac = rng() & 0xffffff;
      if (i < 24) frac = 1u << i;
      if (i == 24) frac = 0;
      if (i == 25) frac = 0xffffff;
      words.push_back(((rng() & 1u) << 31) | (exp << 24) | frac);
    }
    words.push_back(0x00000000u);
    words.push_back(0x80000000u);
  }
  std::vector<uint8_t> bytes(words.size() * 4);
  for (size_t i = 0; i < words.size(); ++i) {
    const uint32_t w = __builtin_bswap32(words[i]);
    std::memcpy(&bytes[4 * i], &w, 4);
  }
  std::vector<float> out(words.size());
  DecodeSamples(bytes.data(), words.size(), SampleFormat::kIbmFloat32,
                ByteOrder::kBigEndian, out.data());
  for (size_t i = 0; i < words.size(); ++i) {
    uint32_t got;
    std::memcpy(&got, &out[i], 4);
    ASSERT_EQ(got, ReferenceIbmToIeee(words[i])) << std::hex << words[i];
  }
}

TEST(FloatToIbmTest, RoundTripsExactlyRepresentableValues) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1e6f, 1e6f);
  for (int i = 0; i < 100000; ++i) {
    // Values with at most 21 significant bits survive IBM's hex normalisation exactly.
    float v = dist(rng);
    int e;
    float m = std::frexp(v, &e);
    v = std::ldexp(std::round(std::ldexp(m, 21)), e - 21);
    ASSERT_EQ(IbmToFloat(FloatToIbm(v)), v) << v;
  }
  EXPECT_EQ(FloatToIbm(-118.625f), 0xC276A000u);
}

std::vector<uint8_t> Bytes(std::initializer_list<int> b) {
  std::vector<uint8_t> v;
  for (int x : b) v.push_back(static_cast<uint8_t>(x));
  return v;
}

TEST(DecodeSamplesTest, EveryFormatBothByteOrders) {
  struct Case {
    SampleFormat format;
    std::vector<uint8_t> be;  // one sample, big-endian
    float expect;
  };
  const std::vector<Case> cases = {
      {SampleFormat::kIbmFloat32, Bytes({0xC2, 0x76, 0xA0, 0x00}), -118.625f},
      {SampleFormat::kInt32, Bytes({0xFF, 0xFF, 0xFF, 0xFE}), -2.0f},
      {SampleFormat::kInt16, Bytes({0x80, 0x00}), -32768.0f},
      {SampleFormat::kIeeeFloat32, Bytes({0x3F, 0xC0, 0x00, 0x00}), 1.5f},
      {SampleFormat::kIeeeFloat64, Bytes({0xC0, 0x09, 0x21, 0xFB, 0x54, 0x44, 0x2D, 0x18}),
       static_cast<float>(-3.141592653589793)},
      {SampleFormat::kInt24, Bytes({0xFF, 0xFF, 0x85}), -123.0f},
      {SampleFormat::kInt8, Bytes({0x85}), -123.0f},
      {SampleFormat::kInt64, Bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x85}), -123.0f},
      {SampleFormat::kUInt32, Bytes({0xFF, 0xFF, 0xFF, 0xFE}), 4294967294.0f},
      {SampleFormat::kUInt16, Bytes({0xFF, 0xFE}), 65534.0f},
      {SampleFormat::kUInt64, Bytes({0, 0, 0, 1, 0, 0, 0, 0}), 4294967296.0f},
      {SampleFormat::kUInt24, Bytes({0xFF, 0xFF, 0x85}), 16777093.0f},
      {SampleFormat::kUInt8, Bytes({0x85}), 133.0f},
  };
  for (const Case& c : cases) {
    ASSERT_EQ(c.be.size(), BytesPerSample(static_cast<int>(c.format)));
    // Three samples so vectorised paths see more than one element.
    std::vector<uint8_t> be, le;
    for (int i = 0; i < 3; ++i) {
      be.insert(be.end(), c.be.begin(), c.be.end());
      le.insert(le.end(), c.be.rbegin(), c.be.rend());
    }
    float out_be[3], out_le[3];
    DecodeSamples(be.data(), 3, c.format, ByteOrder::kBigEndian, out_be);
    DecodeSamples(le.data(), 3, c.format, ByteOrder::kLittleEndian, out_le);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(out_be[i], c.expect) << SampleFormatName(c.format);
      EXPECT_EQ(out_le[i], c.expect) << SampleFormatName(c.format);
    }
  }
}

// Format 4: byte 1 zero, byte 2 the gain exponent, bytes 3-4 an int16 mantissa; the
// value is mantissa * 2^-gain (the literal decode, as the golden values of segyio's test
// files have it).
TEST(SampleFormatTest, FixedPointWithGain) {
  const uint8_t be[] = {0x00, 0x03, 0x00, 0x0c,   // 12 * 2^-3 = 1.5
                        0x00, 0x00, 0xff, 0xfe,   // -2 * 2^0
                        0x00, 0x16, 0x00, 0x01};  // 2^-22
  float out[3];
  DecodeSamples(be, 3, SampleFormat::kFixedPointGain, ByteOrder::kBigEndian, out);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(out[2], 0x1p-22f);
  uint8_t le[12];
  for (int i = 0; i < 3; ++i) {
    for (int b = 0; b < 4; ++b) le[4 * i + b] = be[4 * i + 3 - b];
  }
  float out_le[3];
  DecodeSamples(le, 3, SampleFormat::kFixedPointGain, ByteOrder::kLittleEndian, out_le);
  EXPECT_EQ(out_le[0], 1.5f);
  EXPECT_EQ(out_le[1], -2.0f);
  EXPECT_EQ(out_le[2], 0x1p-22f);
}

TEST(SampleFormatTest, CodesAndErrors) {
  EXPECT_EQ(BytesPerSample(1), 4);
  EXPECT_EQ(BytesPerSample(3), 2);
  EXPECT_EQ(BytesPerSample(7), 3);
  EXPECT_EQ(BytesPerSample(13), 0);
  EXPECT_EQ(*SampleFormatFromCode(4), SampleFormat::kFixedPointGain);
  EXPECT_EQ(BytesPerSample(4), 4);
  auto bad = SampleFormatFromCode(13);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("13"), absl::string_view::npos);
}

}  // namespace
}  // namespace shotstream::segy
