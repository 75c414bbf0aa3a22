// The pipeline alone: a small source in memory, read and encoded unit by unit.
#include "server/stream/shot_pipeline.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/crc32.h"
#include "gtest/gtest.h"
#include "server/stream/reader_pool.h"
#include "wire/sample_encoding.h"

namespace shotstream::stream {
namespace {

constexpr uint32_t kTraces = 6, kSamples = 50;
constexpr uint64_t kTraceBytes = kSamples * sizeof(float);

// Stored traces in the test's memory; Touch counts itself and fails when told.
class MemoryStored final : public io::StoredTraces {
 public:
  MemoryStored(std::vector<const uint8_t*> traces, std::atomic<int>* touches, bool fail)
      : StoredTraces(std::move(traces), kTraceBytes, false), touches_(touches), fail_(fail) {}
  absl::Status Touch() const override {
    ++*touches_;
    return fail_ ? absl::DataLossError("file truncated before the touch") : absl::OkStatus();
  }

 private:
  std::atomic<int>* const touches_;
  const bool fail_;
};

// One shot of kTraces x kSamples (a smooth wave, so the codecs have something to do), in
// chunks of 2 traces; pieces of 2 chunks. `drop_crcs`: its chunks come without CRC-32s.
class MemorySource final : public ShotSource {
 public:
  MemorySource() : samples_(kTraces * kSamples) {
    for (size_t i = 0; i < samples_.size(); ++i) samples_[i] = std::sin(0.05f * i) * 100.0f;
  }
  const std::vector<float>& samples() const { return samples_; }
  mutable std::atomic<int> touches{0}, heads{0};
  bool fail_touch = false, drop_crcs = false;

  double sample_interval_us() const override { return 4000; }
  uint64_t ShotBytes(int64_t, uint32_t) const override { return kTraces * kTraceBytes; }
  absl::StatusOr<dataset::ShotData> ReadShot(int64_t id, const dataset::ReadPlan& plan,
                                             ShotReadCost* cost) const override {
    cost->reads = 1;
    cost->bytes_read = cost->bytes_wanted = kTraces * kTraceBytes;
    return Traces(id, plan, 0, kTraces);
  }
  absl::StatusOr<dataset::ShotHead> ReadShotHead(int64_t id, const dataset::ReadPlan&,
                                                 uint64_t, ShotReadCost*) const override {
    ++heads;
    dataset::ShotHead head;
    head.shot_id = id;
    head.n_traces = kTraces;
    head.n_samples = kSamples;
    head.total_bytes = kTraces * kTraceBytes;
    head.traces_per_piece = 4;
    return head;
  }
  absl::StatusOr<dataset::ShotData> ReadPiece(const dataset::ShotHead& head, size_t piece,
                                              const dataset::ReadPlan& plan,
                                              ShotReadCost*) const override {
    dataset::ShotData d =
        Traces(head.shot_id, plan, head.piece_first(piece), head.piece_traces(piece));
    d.first_trace = head.piece_first(piece);
    return d;
  }

 private:
  dataset::ShotData Traces(int64_t id, const dataset::ReadPlan& plan, uint32_t first,
                           uint32_t n) const {
    dataset::ShotData shot;
    shot.shot_id = id;
    shot.n_traces = n;
    shot.n_samples = kSamples;
    shot.total_bytes = n * kTraceBytes;
    shot.traces_per_chunk = 2;
    const uint8_t* base = reinterpret_cast<const uint8_t*>(samples_.data()) + first * kTraceBytes;
    if (plan.zero_copy != dataset::ZeroCopy::kOff) {
      std::vector<const uint8_t*> traces;
      for (uint32_t t = 0; t < n; ++t) traces.push_back(base + t * kTraceBytes);
      shot.stored = std::make_shared<MemoryStored>(std::move(traces), &touches, fail_touch);
      return shot;
    }
    for (uint32_t t = 0; t < n; t += 2) {
      const uint32_t k = std::min<uint32_t>(2, n - t);
      shot.chunks.push_back(SampleBuffer::CopyOf(std::string_view(
          reinterpret_cast<const char*>(base + t * kTraceBytes), k * kTraceBytes)));
      shot.chunk_traces.push_back(k);
      if (!drop_crcs) shot.chunk_crc32.push_back(Crc32(0, base + t * kTraceBytes, k * kTraceBytes));
    }
    return shot;
  }
  std::vector<float> samples_;
};

class ShotPipelineTest : public ::testing::Test {
 protected:
  ShotPipelineTest() : source_(std::make_shared<MemorySource>()), pool_(2) {
    plan_.source = source_;
    plan_.counters = &counters_;
    plan_.dataset = "ds";
  }
  absl::StatusOr<dataset::ShotData> Read(const ShotUnit& unit, int64_t id = 7) {
    ShotPipeline pipeline(&plan_, &pool_);
    return pipeline.Read(unit, id);
  }
  std::shared_ptr<MemorySource> source_;
  ReaderPool pool_;
  WindowCounters counters_;
  WindowPlan plan_;
};

// A shot read whole and encoded LOSSLESS: every chunk carries the CRC-32 of the float32
// samples it decodes to, it decodes to the shot exactly, and the read is counted.
TEST_F(ShotPipelineTest, AShotIsReadEncodedAndCounted) {
  plan_.shot.encode.encoding = wire::Encoding::kLossless;
  EncodingAdvisor advisor(2);
  plan_.advisor = &advisor;
  absl::StatusOr<dataset::ShotData> shot = Read(ShotUnit{});
  ASSERT_TRUE(shot.ok()) << shot.status();
  EXPECT_EQ(shot->encoding, wire::Encoding::kLossless);
  ASSERT_EQ(shot->chunks.size(), 3u);
  ASSERT_EQ(shot->chunk_crc32.size(), 3u);
  for (size_t c = 0; c < 3; ++c) {
    std::vector<float> out(2 * kSamples);
    ASSERT_TRUE(wire::DecodeSamples(wire::Encoding::kLossless, 0, false,
                                    shot->chunks[c].data(), shot->chunks[c].size(), 2,
                                    kSamples, out.data())
                    .ok());
    EXPECT_EQ(0, std::memcmp(out.data(), source_->samples().data() + c * 2 * kSamples,
                             out.size() * sizeof(float)));
    EXPECT_EQ(shot->chunk_crc32[c], Crc32(0, out.data(), out.size() * sizeof(float)));
  }
  EXPECT_EQ(counters_.reads_issued.load(), 1);
  EXPECT_EQ(counters_.bytes_wanted.load(), int64_t{kTraces * kTraceBytes});
  int64_t latencies = 0;
  for (const auto& n : counters_.read_latency_count) latencies += n.load();
  EXPECT_EQ(latencies, 1);
  EXPECT_GT(advisor.lossless_ratio("ds"), 0);  // the encode was measured for AUTO
}

// Stored traces are touched here, on the executor's side of the hand-off, and a touch
// that fails is the read's error.
TEST_F(ShotPipelineTest, StoredTracesAreTouchedAndATouchsErrorIsTheReads) {
  plan_.shot.read.zero_copy = dataset::ZeroCopy::kLittleEndian;
  absl::StatusOr<dataset::ShotData> shot = Read(ShotUnit{});
  ASSERT_TRUE(shot.ok()) << shot.status();
  EXPECT_TRUE(shot->is_stored());
  EXPECT_EQ(source_->touches.load(), 1);
  source_->fail_touch = true;
  shot = Read(ShotUnit{});
  EXPECT_EQ(shot.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(source_->touches.load(), 2);
}

// A shot in pieces: the first piece reads the head and carries it; a later piece is read
// with the head its unit holds, not by reading the head again.
TEST_F(ShotPipelineTest, PiecesShareTheHeadTheFirstRead) {
  plan_.piece_bytes = 4 * kTraceBytes;
  ShotUnit first;
  first.pieced = true;
  absl::StatusOr<dataset::ShotData> a = Read(first);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_NE(a->head, nullptr);
  EXPECT_EQ(a->n_traces, 4u);
  ShotUnit second = first;
  second.piece = 1;
  second.head = a->head;
  absl::StatusOr<dataset::ShotData> b = Read(second);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->head, a->head);
  EXPECT_EQ(b->n_traces, 2u);
  EXPECT_EQ(b->first_trace, 4u);
  EXPECT_EQ(source_->heads.load(), 1);
}

// The testing hook: the corrupted shot is decoded even where zero copy was asked, and its
// first chunk no longer matches its CRC-32; other shots are untouched.
TEST_F(ShotPipelineTest, TheCorruptShotIsDecodedAndFailsItsCrc) {
  plan_.shot.read.zero_copy = dataset::ZeroCopy::kLittleEndian;
  plan_.corrupt_shot = 7;
  absl::StatusOr<dataset::ShotData> bad = Read(ShotUnit{}, 7);
  ASSERT_TRUE(bad.ok()) << bad.status();
  ASSERT_FALSE(bad->is_stored());
  EXPECT_NE(bad->chunk_crc32[0], Crc32(0, bad->chunks[0].data(), bad->chunks[0].size()));
  EXPECT_EQ(bad->chunk_crc32[1], Crc32(0, bad->chunks[1].data(), bad->chunks[1].size()));
  absl::StatusOr<dataset::ShotData> good = Read(ShotUnit{}, 8);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE(good->is_stored());
}

// A unit that comes out of the source without its chunks' CRC-32s is never handed on.
TEST_F(ShotPipelineTest, ChunksWithoutCrcsAreAnInternalError) {
  source_->drop_crcs = true;
  absl::StatusOr<dataset::ShotData> shot = Read(ShotUnit{});
  EXPECT_EQ(shot.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(shot.status().message().find("shot 7"), std::string::npos) << shot.status();
}

}  // namespace
}  // namespace shotstream::stream
