#include "server/io/coalescing_reader.h"

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/segy/test_writer.h"
#include "server/segy/trace_header.h"

namespace shotstream::io {
namespace {

TEST(PlanReadsTest, MergesNeighboursWithinGapAndSplitsBeyond) {
  const uint64_t tb = 1000;
  const std::vector<uint64_t> sizes = {tb};
  // Contiguous 0,1,2 then a gap of 500 (merged with gap 600), then a gap of 5000.
  std::vector<TraceRef> traces = {{0, 3600}, {0, 4600}, {0, 5600}, {0, 7100}, {0, 13100}};
  CoalesceOptions opt;
  opt.max_gap_bytes = 600;
  ReadPlan plan = PlanReads(traces, sizes, opt);
  ASSERT_EQ(plan.reads.size(), 2u);
  EXPECT_EQ(plan.reads[0].offset, 3600u);
  EXPECT_EQ(plan.reads[0].length, 4500u);  // 3600 .. 8100
  EXPECT_EQ(plan.reads[0].count, 4u);
  EXPECT_EQ(plan.reads[1].offset, 13100u);
  EXPECT_EQ(plan.reads[1].count, 1u);

  opt.max_gap_bytes = 400;  // the 500-byte gap now splits
  plan = PlanReads(traces, sizes, opt);
  EXPECT_EQ(plan.reads.size(), 3u);
}

TEST(PlanReadsTest, SortsAcrossFilesAndRespectsMaxReadBytes) {
  const std::vector<uint64_t> sizes = {100, 200};
  std::vector<TraceRef> traces = {{1, 200}, {0, 300}, {1, 0}, {0, 100}, {0, 200}};
  CoalesceOptions opt;
  opt.max_gap_bytes = 0;
  opt.max_read_bytes = 200;
  ReadPlan plan = PlanReads(traces, sizes, opt);
  // Sorted: (0,100) (0,200) (0,300) (1,0) (1,200)
  EXPECT_EQ(plan.order, (std::vector<size_t>{3, 4, 1, 2, 0}));
  ASSERT_EQ(plan.reads.size(), 4u);  // [100,300) [300,400) [0,200) [200,400)
  EXPECT_EQ(plan.reads[0].length, 200u);
  EXPECT_EQ(plan.reads[1].file_id, 0u);
  EXPECT_EQ(plan.reads[2].file_id, 1u);
  EXPECT_EQ(plan.reads[3].file_id, 1u);
}

TEST(PlanReadsTest, RepeatedTraceIsReadOnce) {
  const std::vector<uint64_t> sizes = {100};
  std::vector<TraceRef> traces = {{0, 500}, {0, 500}, {0, 500}};
  ReadPlan plan = PlanReads(traces, sizes, CoalesceOptions{});
  ASSERT_EQ(plan.reads.size(), 1u);
  EXPECT_EQ(plan.reads[0].count, 3u);
  EXPECT_EQ(plan.reads[0].length, 100u);
}

class ReadTracesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("TEST_TMPDIR");
    for (int f = 0; f < 2; ++f) {
      segy::TestFileSpec spec;
      spec.format = f == 0 ? 1 : 5;  // IBM in one file, IEEE in the other
      spec.order = f == 0 ? segy::ByteOrder::kBigEndian : segy::ByteOrder::kLittleEndian;
      spec.n_samples = kSamples;
      for (int t = 0; t < kTraces; ++t) {
        segy::TestTrace tr;
        tr.fields.push_back({9, 4, f * 1000 + t});
        for (int s = 0; s < kSamples; ++s) tr.samples.push_back(Value(f, t, s));
        spec.traces.push_back(tr);
      }
      const std::string path = std::string(dir ? dir : "/tmp") + "/r" + std::to_string(f) + ".sgy";
      segy::WriteSegyFile(path, spec);
      auto file = segy::SegyFile::Open(path);
      ASSERT_TRUE(file.ok()) << file.status();
      owned_.push_back(std::move(*file));
      files_.push_back(owned_.back().get());
    }
  }
  // Values exactly representable in IBM float.
  static float Value(int f, int t, int s) { return f * 100000.0f + t * 100.0f + s * 0.5f; }

  static constexpr int kSamples = 37;
  static constexpr int kTraces = 20;
  std::vector<std::unique_ptr<segy::SegyFile>> owned_;
  std::vector<const segy::SegyFile*> files_;
};

TEST_F(ReadTracesTest, ReturnsTracesInCallerOrderBitExact) {
  std::vector<TraceRef> traces;
  std::vector<std::pair<int, int>> expect;
  std::mt19937 rng(3);
  for (int i = 0; i < 60; ++i) {  // random order with repeats, both files
    const int f = rng() % 2;
    const int t = rng() % kTraces;
    traces.push_back({static_cast<uint32_t>(f), files_[f]->layout().TraceOffset(t)});
    expect.emplace_back(f, t);
  }
  std::vector<float> out(traces.size() * kSamples, -1.0f);
  std::vector<float*> dst;
  for (size_t i = 0; i < traces.size(); ++i) dst.push_back(out.data() + i * kSamples);
  std::vector<uint8_t> headers(traces.size() * 240);
  ReadStats stats;
  ASSERT_TRUE(ReadTraces(files_, traces, CoalesceOptions{}, dst.data(), headers.data(), &stats)
                  .ok());
  for (size_t i = 0; i < traces.size(); ++i) {
    const auto [f, t] = expect[i];
    for (int s = 0; s < kSamples; ++s) {
      ASSERT_EQ(out[i * kSamples + s], Value(f, t, s)) << i << " " << s;
    }
    const auto order = files_[f]->layout().byte_order;
    EXPECT_EQ(segy::ReadHeaderInt(headers.data() + 240 * i, 9, 4, order), f * 1000 + t);
  }
  // Everything fits in two reads (one per file), well under one read per trace.
  EXPECT_EQ(stats.reads, 2u);
}

TEST_F(ReadTracesTest, TruncatedFileIsDataLossNamingFileAndOffset) {
  std::vector<TraceRef> traces = {{0, files_[0]->size() - 10}};
  std::vector<float> out(kSamples);
  float* dst = out.data();
  absl::Status s = ReadTraces(files_, traces, CoalesceOptions{}, &dst, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("r0.sgy"), absl::string_view::npos);
}

}  // namespace
}  // namespace shotstream::io
