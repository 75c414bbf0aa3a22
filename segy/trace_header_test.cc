#include "segy/trace_header.h"

#include <cstring>

#include "gtest/gtest.h"

namespace shotstream::segy {
namespace {

void Put(uint8_t* h, int byte, int size, int64_t v) {
  for (int i = 0; i < size; ++i) h[byte - 1 + i] = static_cast<uint8_t>(v >> (8 * (size - 1 - i)));
}

TEST(TraceHeaderTest, ReadsSignedFieldsBigEndian) {
  uint8_t h[240] = {};
  Put(h, 9, 4, -7);
  Put(h, 115, 2, 1500);
  EXPECT_EQ(ReadHeaderInt(h, 9, 4, ByteOrder::kBigEndian), -7);
  EXPECT_EQ(ReadHeaderInt(h, 115, 2, ByteOrder::kBigEndian), 1500);
}

TEST(TraceHeaderTest, CoordinateScalarNegativeDividesPositiveMultipliesZeroIsOne) {
  uint8_t h[240] = {};
  auto gx = ResolveHeader("group_x");
  ASSERT_TRUE(gx.ok());
  Put(h, 81, 4, 12345);
  Put(h, 71, 2, -100);
  EXPECT_DOUBLE_EQ(HeaderValue(*gx, h, ByteOrder::kBigEndian), 123.45);
  Put(h, 71, 2, 10);
  EXPECT_DOUBLE_EQ(HeaderValue(*gx, h, ByteOrder::kBigEndian), 123450.0);
  Put(h, 71, 2, 0);
  EXPECT_DOUBLE_EQ(HeaderValue(*gx, h, ByteOrder::kBigEndian), 12345.0);
}

TEST(TraceHeaderTest, ElevationScalar) {
  uint8_t h[240] = {};
  auto se = ResolveHeader("source_elevation");
  auto re = ResolveHeader("receiver_elevation");
  ASSERT_TRUE(se.ok() && re.ok());
  Put(h, 45, 4, 500);
  Put(h, 41, 4, -250);
  Put(h, 69, 2, -10);
  Put(h, 71, 2, 1000);  // the coordinate scalar must not apply to elevations
  EXPECT_DOUBLE_EQ(HeaderValue(*se, h, ByteOrder::kBigEndian), 50.0);
  EXPECT_DOUBLE_EQ(HeaderValue(*re, h, ByteOrder::kBigEndian), -25.0);
}

TEST(TraceHeaderTest, ResolvesContractAndStandardNamesAndRejectsOthers) {
  for (const std::string& name : ServableHeaderNames()) {
    EXPECT_TRUE(ResolveHeader(name).ok()) << name;
  }
  auto off = ResolveHeader("offset");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->byte, 37);
  auto bad = ResolveHeader("nonsense");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("nonsense"), absl::string_view::npos);
  EXPECT_EQ(bad.status().message().find("did you mean"), absl::string_view::npos);
  auto typo = ResolveHeader("ofset");
  EXPECT_NE(typo.status().message().find("did you mean 'offset'?"), absl::string_view::npos)
      << typo.status();
  EXPECT_NE(ResolveHeader("sourcex").status().message().find("did you mean 'source_x'?"),
            absl::string_view::npos);
  EXPECT_EQ(ClosestName("line2", {"line1", "part1only"}), "line1");
  EXPECT_EQ(ClosestName("zzzzzz", {"line1"}), "");
}

TEST(TraceHeaderTest, StandardFieldsTileTheHeaderWithoutOverlap) {
  int covered[241] = {};
  for (const HeaderField& f : StandardTraceHeaderFields()) {
    for (int b = f.byte; b < f.byte + f.size; ++b) {
      ASSERT_LE(b, 240) << f.name;
      ASSERT_EQ(covered[b]++, 0) << f.name << " overlaps at byte " << b;
    }
  }
}

TEST(ShotKeyTest, Parses) {
  EXPECT_EQ(ParseShotKey("field_record")->byte, 9);
  EXPECT_EQ(ParseShotKey("energy_source_point")->byte, 17);
  EXPECT_EQ(ParseShotKey("inline")->byte, 189);
  EXPECT_EQ(ParseShotKey("crossline")->byte, 193);
  EXPECT_EQ(ParseShotKey("byte:21")->byte, 21);
  EXPECT_EQ(ParseShotKey("cdp")->byte, 21);  // any 4-byte standard field by its name
  EXPECT_FALSE(ParseShotKey("trace_identification_code").ok());  // a 2-byte one
  EXPECT_FALSE(ParseShotKey("byte:0").ok());
  EXPECT_FALSE(ParseShotKey("byte:238").ok());
  EXPECT_FALSE(ParseShotKey("shots").ok());
}

}  // namespace
}  // namespace shotstream::segy

namespace shotstream::segy {
namespace {

TEST(TraceHeaderTest, ToBigEndianSwapsEveryStandardFieldOfLittleEndianHeaders) {
  uint8_t le[kTraceHeaderBytes], be[kTraceHeaderBytes], out[kTraceHeaderBytes];
  for (int i = 0; i < kTraceHeaderBytes; ++i) le[i] = static_cast<uint8_t>(i * 7 + 1);
  std::memcpy(be, le, sizeof(le));
  for (const HeaderField& f : StandardTraceHeaderFields()) {
    for (int i = 0; i < f.size; ++i) be[f.byte - 1 + i] = le[f.byte - 1 + f.size - 1 - i];
    // The same value read either way.
    EXPECT_EQ(ReadHeaderInt(le, f.byte, f.size, ByteOrder::kLittleEndian),
              ReadHeaderInt(be, f.byte, f.size, ByteOrder::kBigEndian)) << f.name;
  }
  TraceHeaderToBigEndian(le, ByteOrder::kLittleEndian, out);
  EXPECT_EQ(0, std::memcmp(out, be, sizeof(be)));
  TraceHeaderToBigEndian(be, ByteOrder::kBigEndian, out);
  EXPECT_EQ(0, std::memcmp(out, be, sizeof(be)));
}

}  // namespace
}  // namespace shotstream::segy
