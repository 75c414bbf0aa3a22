#include "client/plot.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::client {
namespace {

TEST(PlotTest, TicksAreRoundNumbers) {
  EXPECT_EQ(NiceTicks(0, 248.9, 8), (std::vector<double>{0, 50, 100, 150, 200}));
  EXPECT_EQ(NiceTicks(0, 1996, 8), (std::vector<double>{0, 500, 1000, 1500}));
  EXPECT_EQ(NiceTicks(-2500, 2500, 6), (std::vector<double>{-2000, -1000, 0, 1000, 2000}));
  EXPECT_EQ(NiceTicks(1, 24, 6), (std::vector<double>{5, 10, 15, 20}));
  const std::vector<double> small = NiceTicks(-0.03, 0.03, 4);
  ASSERT_EQ(small.size(), 3u);
  EXPECT_NEAR(small[0], -0.02, 1e-12);
  EXPECT_EQ(small[1], 0.0);
  EXPECT_NEAR(small[2], 0.02, 1e-12);
}

TEST(PlotTest, GainsAndTheirFlag) {
  // Two traces of 5 samples at 1 ms: t^2 multiplies sample i by (i ms)^2.
  const std::vector<float> x = {1, 1, 1, 1, 1, 2, 2, 2, 2, 2};
  PlotOptions o;
  o.gain_power = 2;
  const std::vector<float> g = ApplyGain(x.data(), 2, 5, 1000, o);
  EXPECT_EQ(g[0], 0.0f);
  EXPECT_FLOAT_EQ(g[3], 9e-6f);
  EXPECT_FLOAT_EQ(g[5 + 4], 2 * 16e-6f);
  // AGC: a constant trace becomes 1 everywhere, whatever its level.
  PlotOptions agc;
  agc.agc_window_ms = 2;
  const std::vector<float> a = ApplyGain(x.data(), 2, 5, 1000, agc);
  for (float v : a) EXPECT_FLOAT_EQ(v, 1.0f);
  EXPECT_EQ(*ParseGain("t^2"), 2.0);
  EXPECT_EQ(*ParseGain("t^1.5"), 1.5);
  EXPECT_EQ(ParseGain("2").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseGain("t^").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlotTest, WritesAPngWithTheAxesAndColourBar) {
  gpu::PinnedBufferPool pool;
  Shot shot;
  shot.shot_id = 7;
  shot.n_traces = 30;
  shot.n_samples = 200;
  shot.sample_interval_us = 2000;
  shot.samples = pool.Acquire(30 * 200);
  for (size_t i = 0; i < shot.samples.size(); ++i) shot.samples.data()[i] = std::sin(0.1 * i);
  std::vector<double> offsets;
  for (int t = 0; t < 30; ++t) offsets.push_back(100.0 * t - 1000);
  shot.headers.emplace_back("offset", offsets);
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/plot.png";
  PlotOptions o;
  o.agc_window_ms = 50;
  ASSERT_TRUE(WriteShotPng(path, shot, o).ok());
  FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  unsigned char head[24];
  ASSERT_EQ(std::fread(head, 1, 24, f), 24u);
  std::fclose(f);
  EXPECT_EQ(head[1], 'P');
  const uint32_t width = head[16] << 24 | head[17] << 16 | head[18] << 8 | head[19];
  EXPECT_GT(width, 70u + 120u + 90u - 1);  // axis, traces, colour bar
}

}  // namespace
}  // namespace shotstream::client
