#include "segy/segy_writer.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "segy/trace_header.h"

namespace shotstream::segy {
namespace {

using Columns = std::vector<std::pair<std::string, std::vector<double>>>;

// Trace t's value of `name` as a reader sees it (its scalar applied).
double ReadBack(const ShotTraceHeaders& h, uint32_t t, const std::string& name) {
  uint8_t trace[240];
  h.Fill(t, t + 1, trace);
  auto sel = ResolveHeader(name);
  EXPECT_TRUE(sel.ok()) << sel.status();
  return HeaderValue(*sel, trace, ByteOrder::kBigEndian);
}

int16_t ScalarAt(const ShotTraceHeaders& h, uint32_t t, int byte) {
  uint8_t trace[240];
  h.Fill(t, t + 1, trace);
  return static_cast<int16_t>(ReadHeaderInt(trace, byte, 2, ByteOrder::kBigEndian));
}

TEST(ShotTraceHeadersTest, EachTraceGetsTheScalarThatStoresItsCoordinatesExactly) {
  // Trace 1: UTM halves (/10); trace 2: eighths (/1000); trace 3: past 4 bytes, x100.
  auto h = ShotTraceHeaders::Make(
      5, 3, 10, 1000,
      Columns{{"source_x", {512345.5, 0.125, 67e9}},
              {"group_y", {6712345.5, 2.5, 1e9}},
              {"receiver_elevation", {12.25, 3, -4}}});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(ScalarAt(*h, 0, 71), -10);
  EXPECT_EQ(ScalarAt(*h, 1, 71), -1000);
  EXPECT_EQ(ScalarAt(*h, 2, 71), 100);
  EXPECT_EQ(ScalarAt(*h, 0, 69), -100) << "elevations have a scalar of their own";
  EXPECT_EQ(ScalarAt(*h, 1, 69), 1);
  EXPECT_DOUBLE_EQ(ReadBack(*h, 0, "source_x"), 512345.5);
  EXPECT_DOUBLE_EQ(ReadBack(*h, 0, "group_y"), 6712345.5);
  EXPECT_DOUBLE_EQ(ReadBack(*h, 1, "source_x"), 0.125);
  EXPECT_DOUBLE_EQ(ReadBack(*h, 2, "source_x"), 67e9);
  EXPECT_DOUBLE_EQ(ReadBack(*h, 0, "receiver_elevation"), 12.25);
  EXPECT_EQ(h->max_error(), 0.0);
  EXPECT_EQ(h->worst(), "");
}

TEST(ShotTraceHeadersTest, NoExactScalarStoresTheLeastErrorAndSaysWhere) {
  // 0.125 needs /1000, where 6.7e6 overflows 4 bytes: /100 is the best that fits.
  auto h = ShotTraceHeaders::Make(
      1, 2, 10, 1000, Columns{{"source_x", {0.125, 0.125}}, {"group_y", {6.7e6, 6.7e6}}});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(ScalarAt(*h, 0, 71), -100);
  EXPECT_DOUBLE_EQ(ReadBack(*h, 0, "group_y"), 6.7e6) << "never a wrapped integer";
  EXPECT_NEAR(ReadBack(*h, 0, "source_x"), 0.125, 0.005 + 1e-12);
  EXPECT_NEAR(h->max_error(), 0.005, 1e-9);
  EXPECT_NE(h->worst().find("shot 1, trace 1, source_x 0.125 stored as 0.12"),
            std::string::npos)
      << h->worst();
}

TEST(ShotTraceHeadersTest, UnscaledFieldsRoundWithTheErrorReported) {
  auto h = ShotTraceHeaders::Make(2, 2, 10, 1000, Columns{{"offset", {100, 12.5}}});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_DOUBLE_EQ(ReadBack(*h, 0, "offset"), 100);
  EXPECT_DOUBLE_EQ(ReadBack(*h, 1, "offset"), 12) << "half to even";
  EXPECT_DOUBLE_EQ(h->max_error(), 0.5);
  EXPECT_NE(h->worst().find("trace 2, offset 12.5"), std::string::npos) << h->worst();
}

TEST(ShotTraceHeadersTest, ValuesNoFieldHoldsAreRefusedByName) {
  struct Case {
    Columns columns;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{{"group_x", {1, 3e13}}}, "shot 7, trace 2: header group_x is 3e+13"},
      {{{"offset", {3e9, 1}}}, "shot 7, trace 1: header offset is 3e+09"},
      {{{"source_measurement_unit", {1, 40000}}}, "header source_measurement_unit is 40000"},
      {{{"source_y", {std::numeric_limits<double>::quiet_NaN(), 1}}},
       "trace 1: header source_y is nan"},
  };
  for (const Case& c : cases) {
    auto h = ShotTraceHeaders::Make(7, 2, 10, 1000, c.columns);
    ASSERT_FALSE(h.ok()) << c.says;
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(h.status().message().find(c.says), absl::string_view::npos) << h.status();
  }
}

}  // namespace
}  // namespace shotstream::segy
