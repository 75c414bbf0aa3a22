#include "server/io/coalescing_reader.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <memory>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/segy/segy_file.h"
#include "server/segy/test_writer.h"
#include "segy/trace_header.h"

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
      auto file = segy::OpenSegyFile(path);
      ASSERT_TRUE(file.ok()) << file.status();
      owned_.push_back(std::move(*file));
      files_.push_back(owned_.back().get());
    }
  }
  // Values exactly representable in IBM float.
  static float Value(int f, int t, int s) { return f * 100000.0f + t * 100.0f + s * 0.5f; }

  static constexpr int kSamples = 37;
  static constexpr int kTraces = 20;
  std::vector<std::unique_ptr<io::TraceFile>> owned_;
  std::vector<const io::TraceFile*> files_;
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
  std::vector<uint32_t> trace_crc(traces.size());
  ASSERT_TRUE(ReadTraces(files_, traces, CoalesceOptions{}, dst.data(), headers.data(), &stats,
                         trace_crc.data())
                  .ok());
  for (size_t i = 0; i < traces.size(); ++i) {
    const auto [f, t] = expect[i];
    EXPECT_EQ(trace_crc[i], ::crc32(0, reinterpret_cast<const Bytef*>(dst[i]),
                                    kSamples * sizeof(float)))
        << i;
    for (int s = 0; s < kSamples; ++s) {
      ASSERT_EQ(out[i * kSamples + s], Value(f, t, s)) << i << " " << s;
    }
    const auto order = files_[f]->layout().byte_order;
    EXPECT_EQ(segy::ReadHeaderInt(headers.data() + 240 * i, 9, 4, order), f * 1000 + t);
  }
  // Everything fits in two reads (one per file), well under one read per trace.
  EXPECT_EQ(stats.reads, 2u);
}

TEST_F(ReadTracesTest, WindowReadsItsSamplesAndTheGapRuleDecidesWhatElse) {
  std::vector<TraceRef> traces;
  for (int t = kTraces - 1; t >= 0; t -= 2) {
    for (uint32_t f = 0; f < 2; ++f) traces.push_back({f, files_[f]->layout().TraceOffset(t)});
  }
  const SampleRange range{5, 11};
  std::vector<float> out(traces.size() * range.count, -1.0f);
  std::vector<float*> dst;
  for (size_t i = 0; i < traces.size(); ++i) dst.push_back(out.data() + i * range.count);
  std::vector<uint8_t> headers(traces.size() * 240);
  std::vector<uint32_t> crc(traces.size());
  ReadStats through;
  ASSERT_TRUE(ReadTraces(files_, traces, CoalesceOptions{}, dst.data(), headers.data(), &through,
                         crc.data(), range)
                  .ok());
  for (size_t i = 0; i < traces.size(); ++i) {
    const int f = traces[i].file_id;
    const int t = kTraces - 1 - 2 * static_cast<int>(i / 2);
    for (uint32_t s = 0; s < range.count; ++s) {
      ASSERT_EQ(out[i * range.count + s], Value(f, t, range.start + s)) << i << " " << s;
    }
    EXPECT_EQ(segy::ReadHeaderInt(headers.data() + 240 * i, 9, 4, files_[f]->layout().byte_order),
              f * 1000 + t);
    EXPECT_EQ(crc[i], ::crc32(0, reinterpret_cast<const Bytef*>(dst[i]), range.count * 4));
  }
  // Read through (the default gap) in one read a file; wanted: headers and windows only.
  EXPECT_EQ(through.reads, 2u);
  EXPECT_EQ(through.bytes_wanted, traces.size() * (240 + range.count * 4));
  // With no gap allowed, each header and its window are read apart: only wanted bytes.
  CoalesceOptions tight;
  tight.max_gap_bytes = 0;
  ReadStats apart;
  ASSERT_TRUE(ReadTraces(files_, traces, tight, dst.data(), nullptr, &apart, nullptr, range).ok());
  EXPECT_EQ(apart.bytes_read, apart.bytes_wanted);
  EXPECT_LT(apart.bytes_read, through.bytes_read);
  EXPECT_EQ(apart.reads, 2 * traces.size());
  // As stored: the IEEE file's bytes, and the CRC of what a client decodes them to.
  std::vector<uint8_t> raw(traces.size() * range.count * 4);
  std::vector<uint8_t*> raw_dst;
  for (size_t i = 0; i < traces.size(); ++i) raw_dst.push_back(raw.data() + i * range.count * 4);
  std::vector<uint32_t> raw_crc(traces.size());
  ASSERT_TRUE(CopyStoredTraces(files_, traces, CoalesceOptions{}, raw_dst.data(), nullptr,
                               nullptr, raw_crc.data(), range)
                  .ok());
  EXPECT_EQ(raw_crc, crc);
  float first;
  std::memcpy(&first, raw_dst[1], 4);  // file 1 is IEEE little-endian
  EXPECT_EQ(first, Value(1, kTraces - 1, range.start));
}

// The CRC-32 of stored traces [first, first + n) read from their bytes now.
uint32_t CrcNow(const StoredTraces& stored, size_t first, size_t n) {
  uLong crc = 0;
  for (size_t i = first; i < first + n; ++i) {
    crc = ::crc32(crc, stored.traces()[i], static_cast<uInt>(stored.trace_bytes()));
  }
  return static_cast<uint32_t>(crc);
}

// The IEEE file (1) opened again, mapped, as zero-copy sends need it.
class StoredTracesTest : public ReadTracesTest {
 protected:
  void SetUp() override {
    ReadTracesTest::SetUp();
    segy::OpenOptions mmap;
    mmap.io = IoMode::kMmap;
    auto file = segy::OpenSegyFile(files_[1]->path(), mmap);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->mapped());
    owned_.push_back(std::move(*file));
    files_[1] = owned_.back().get();
  }
};

TEST_F(StoredTracesTest, KeepTheirCrcsForTheFileAndWindowsDoNot) {
  std::vector<TraceRef> traces;
  for (int t : {3, 4, 5, 9, 0, 1}) traces.push_back({1, files_[1]->layout().TraceOffset(t)});
  auto stored = LocateStoredTraces(files_, traces, CoalesceOptions{}, nullptr, nullptr, {}, 7);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(files_[1]->crcs().held_bytes(), 0u);
  EXPECT_EQ((*stored)->KeptCrc(0, traces.size()), std::nullopt) << "none kept yet";
  const uint32_t before = CrcNow(**stored, 0, traces.size());
  // Computed on first use, in any split, each piece continuing the last.
  absl::StatusOr<uint32_t> head = (*stored)->Crc(0, 2, 0);
  ASSERT_TRUE(head.ok());
  absl::StatusOr<uint32_t> whole = (*stored)->Crc(2, traces.size() - 2, *head);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, before);
  EXPECT_GT(files_[1]->crcs().held_bytes(), 0u);
  uint32_t kept;
  EXPECT_TRUE(files_[1]->crcs().Find(3, &kept));
  EXPECT_FALSE(files_[1]->crcs().Find(2, &kept));  // never sent
  // Kept: joined without a read, in any split (traces 4-5-9, then the whole set).
  EXPECT_EQ((*stored)->KeptCrc(1, 3), std::optional<uint32_t>(CrcNow(**stored, 1, 3)));
  EXPECT_EQ((*stored)->KeptCrc(0, traces.size()), std::optional<uint32_t>(before));

  // A byte that changes in storage after the first send (bit rot, a write in place):
  // the kept CRC still says what was there, so the client's check fails on it.
  const uint64_t at = files_[1]->layout().TraceOffset(4) + 240 + 8;
  {
    const int fd = ::open(files_[1]->path().c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const uint8_t rot = 0x5A;
    ASSERT_EQ(::pwrite(fd, &rot, 1, static_cast<off_t>(at)), 1);
    ::close(fd);
  }
  auto again = LocateStoredTraces(files_, traces, CoalesceOptions{}, nullptr, nullptr, {}, 7);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(CrcNow(**again, 0, traces.size()), before);
  absl::StatusOr<uint32_t> sent = (*again)->Crc(0, traces.size(), 0);
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, before);
  EXPECT_EQ((*again)->KeptCrc(0, traces.size()), std::optional<uint32_t>(before))
      << "the kept CRC, not the rotten bytes'";

  // A window reads its bytes every time, and keeps nothing.
  const SampleRange range{1, 9};
  auto window = LocateStoredTraces(files_, traces, CoalesceOptions{}, nullptr, nullptr, range, 7);
  ASSERT_TRUE(window.ok());
  absl::StatusOr<uint32_t> window_crc = (*window)->Crc(0, traces.size(), 0);
  ASSERT_TRUE(window_crc.ok());
  EXPECT_EQ(*window_crc, CrcNow(**window, 0, traces.size()));
  EXPECT_EQ((*window)->KeptCrc(0, traces.size()), std::nullopt);
  EXPECT_FALSE(files_[1]->crcs().Find(2, &kept));
  // Keep() keeps each trace's place in its file: trace 9 (index 3) first.
  (*again)->Keep(std::vector<size_t>{3, 5});
  absl::StatusOr<uint32_t> kept_two = (*again)->Crc(0, 2, 0);
  ASSERT_TRUE(kept_two.ok());
  EXPECT_EQ(*kept_two, CrcNow(**again, 0, 2));
}

TEST_F(StoredTracesTest, RunsWhoseCrcsAreKeptAreNotTouchedAgain) {
  std::vector<TraceRef> traces;
  for (int t = 5; t < 15; ++t) traces.push_back({1, files_[1]->layout().TraceOffset(t)});
  auto first = LocateStoredTraces(files_, traces, CoalesceOptions{}, nullptr, nullptr, {}, 7);
  ASSERT_TRUE(first.ok());
  const uint64_t before = StoredBytesTouched();
  ASSERT_TRUE((*first)->Touch().ok());
  const uint64_t touched = StoredBytesTouched() - before;
  EXPECT_GE(touched, traces.size() * (*first)->trace_bytes());  // one run: the traces and
  EXPECT_LT(touched, traces.size() * files_[1]->layout().trace_bytes);  // headers between
  ASSERT_TRUE((*first)->Crc(0, traces.size(), 0).ok());  // sent: their CRC-32s are kept
  // Sent again: mapped already, not populated again.
  auto second = LocateStoredTraces(files_, traces, CoalesceOptions{}, nullptr, nullptr, {}, 7);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE((*second)->Touch().ok());
  EXPECT_EQ(StoredBytesTouched() - before, touched);
  // One trace more, never sent: the run is touched again, whole.
  traces.push_back({1, files_[1]->layout().TraceOffset(15)});
  auto third = LocateStoredTraces(files_, traces, CoalesceOptions{}, nullptr, nullptr, {}, 7);
  ASSERT_TRUE(third.ok());
  ASSERT_TRUE((*third)->Touch().ok());
  EXPECT_GT(StoredBytesTouched() - before, 2 * touched);
  // A window keeps no CRC-32: touched every time.
  auto window = LocateStoredTraces(files_, traces, CoalesceOptions{}, nullptr, nullptr,
                                   SampleRange{1, 9}, 7);
  ASSERT_TRUE(window.ok());
  const uint64_t at = StoredBytesTouched();
  ASSERT_TRUE((*window)->Touch().ok());
  const uint64_t once = StoredBytesTouched() - at;
  EXPECT_GT(once, 0u);
  ASSERT_TRUE((*window)->Crc(0, traces.size(), 0).ok());
  ASSERT_TRUE((*window)->Touch().ok());
  EXPECT_EQ(StoredBytesTouched() - at, 2 * once);
}

TEST_F(StoredTracesTest, KeptTracesAreLocatedWithoutAReadOnceAllWereSent) {
  std::vector<TraceRef> traces;
  for (int t : {6, 7, 8, 2, 3}) traces.push_back({1, files_[1]->layout().TraceOffset(t)});
  // None sent yet: nothing kept, nothing located.
  auto none = LocateKeptTraces(files_, traces, nullptr, 7);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, nullptr);
  auto first = LocateStoredTraces(files_, traces, CoalesceOptions{}, nullptr, nullptr, {}, 7);
  ASSERT_TRUE(first.ok());
  absl::StatusOr<uint32_t> sent = (*first)->Crc(0, traces.size(), 0);
  ASSERT_TRUE(sent.ok());

  const uint64_t reads_before = files_[1]->read_calls();
  ReadStats stats;
  auto kept = LocateKeptTraces(files_, traces, &stats, 7);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_NE(*kept, nullptr);
  EXPECT_EQ(files_[1]->read_calls(), reads_before);  // no read, no stat
  EXPECT_EQ((*kept)->traces(), (*first)->traces());  // the same samples, in the same order
  EXPECT_EQ((*kept)->trace_bytes(), (*first)->trace_bytes());
  EXPECT_EQ((*kept)->big_endian(), (*first)->big_endian());
  absl::StatusOr<uint32_t> again = (*kept)->Crc(0, traces.size(), 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *sent);
  EXPECT_EQ(*again, CrcNow(**kept, 0, traces.size()));
  const uint64_t touched = StoredBytesTouched();
  ASSERT_TRUE((*kept)->Touch().ok());  // mapped already: nothing populated
  EXPECT_EQ(StoredBytesTouched(), touched);
  EXPECT_EQ(stats.reads, 2u);  // the runs 6-8 and 2-3
  EXPECT_EQ(stats.bytes_wanted, traces.size() * files_[1]->layout().trace_bytes);

  // One trace never sent, or a file read by pread: not located here.
  traces.push_back({1, files_[1]->layout().TraceOffset(12)});
  auto one_new = LocateKeptTraces(files_, traces, nullptr, 7);
  ASSERT_TRUE(one_new.ok());
  EXPECT_EQ(*one_new, nullptr);
  std::vector<TraceRef> unmapped = {{0, files_[0]->layout().TraceOffset(6)}};
  auto by_pread = LocateKeptTraces(files_, unmapped, nullptr, 7);
  ASSERT_TRUE(by_pread.ok());
  EXPECT_EQ(*by_pread, nullptr);
}

TEST_F(StoredTracesTest, BeyondTheBudgetAreReadEveryTime) {
  TraceCrcBudget& budget = TraceCrcBudget::Default();
  const uint64_t limit = budget.limit();
  budget.SetLimit(budget.used());  // no room for another table
  std::vector<TraceRef> traces;
  for (int t = 0; t < kTraces; ++t) traces.push_back({1, files_[1]->layout().TraceOffset(t)});
  auto stored = LocateStoredTraces(files_, traces, CoalesceOptions{}, nullptr, nullptr, {}, 7);
  ASSERT_TRUE(stored.ok());
  absl::StatusOr<uint32_t> crc = (*stored)->Crc(0, traces.size(), 0);
  budget.SetLimit(limit);
  ASSERT_TRUE(crc.ok());
  EXPECT_EQ(*crc, CrcNow(**stored, 0, traces.size()));
  EXPECT_EQ(files_[1]->crcs().held_bytes(), 0u);
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

namespace shotstream::io {
namespace {

// Random formats x byte orders x sample counts (rev 2 extended counts above 65535) x trace
// counts, written by the test writer and read back through the coalescing reader exactly.
TEST(RoundTripTest, RandomFilesReadBackExactly) {
  std::mt19937 rng(2024);
  const int kFormats[] = {1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 15, 16};
  const char* dir = std::getenv("TEST_TMPDIR");
  for (int iter = 0; iter < 120; ++iter) {
    const int format = kFormats[rng() % 13];
    const auto order = rng() % 2 ? segy::ByteOrder::kBigEndian : segy::ByteOrder::kLittleEndian;
    uint32_t ns = 1 + rng() % 3000;
    if (iter % 20 == 0) ns = 65535 + 1 + rng() % 5000;  // rev 2 extended count
    if (iter % 20 == 1) ns = 65535;
    const int n_traces = 1 + rng() % 6;
    segy::TestFileSpec spec;
    spec.format = format;
    spec.order = order;
    spec.n_samples = ns;
    std::vector<std::vector<float>> want;
    for (int t = 0; t < n_traces; ++t) {
      segy::TestTrace tr;
      tr.fields.push_back({9, 4, static_cast<int64_t>(rng() % 5)});
      std::vector<float> v(ns);
      for (float& x : v) {
        switch (format) {
          case 1: x = static_cast<float>(static_cast<int32_t>(rng() % 2000001) - 1000000) / 64.0f; break;
          case 5: case 6: {
            uint32_t bits = rng();
            bits = (bits & 0x807fffffu) | ((1u + rng() % 253u) << 23);  // finite, normal
            std::memcpy(&x, &bits, 4);
            break;
          }
          case 2: case 9: x = static_cast<float>(static_cast<int32_t>(rng() % 16777217) - 8388608); break;
          case 3: x = static_cast<float>(static_cast<int16_t>(rng())); break;
          case 7: x = static_cast<float>(static_cast<int32_t>(rng() % 16777216) - 8388608); break;
          case 8: x = static_cast<float>(static_cast<int8_t>(rng())); break;
          case 10: case 12: x = static_cast<float>(rng() % 16777217); break;
          case 11: x = static_cast<float>(static_cast<uint16_t>(rng())); break;
          case 15: x = static_cast<float>(rng() % 16777216); break;
          case 16: x = static_cast<float>(static_cast<uint8_t>(rng())); break;
        }
      }
      tr.samples = v;
      want.push_back(v);
      spec.traces.push_back(tr);
    }
    const std::string path = std::string(dir ? dir : "/tmp") + "/rt.sgy";
    segy::WriteSegyFile(path, spec);
    auto file = segy::OpenSegyFile(path);
    ASSERT_TRUE(file.ok()) << file.status() << " format " << format << " ns " << ns;
    ASSERT_EQ((*file)->layout().n_samples, ns);
    ASSERT_EQ((*file)->layout().byte_order, order) << "format " << format;
    std::vector<TraceRef> refs;
    std::vector<int> picks;
    for (int k = 0; k < 2 * n_traces; ++k) {  // random order with repeats
      const int t = rng() % n_traces;
      picks.push_back(t);
      refs.push_back({0, (*file)->layout().TraceOffset(t)});
    }
    std::vector<float> out(refs.size() * ns);
    std::vector<float*> dst;
    for (size_t k = 0; k < refs.size(); ++k) dst.push_back(out.data() + k * ns);
    const io::TraceFile* files[] = {file->get()};
    ASSERT_TRUE(ReadTraces(files, refs, CoalesceOptions{}, dst.data(), nullptr).ok());
    for (size_t k = 0; k < refs.size(); ++k) {
      for (uint32_t i = 0; i < ns; ++i) {
        ASSERT_EQ(out[k * ns + i], want[picks[k]][i])
            << "format " << format << " order " << static_cast<int>(order) << " ns " << ns
            << " trace " << picks[k] << " sample " << i;
      }
    }
  }
}

}  // namespace
}  // namespace shotstream::io
