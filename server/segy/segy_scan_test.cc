#include "server/segy/segy_scan.h"

#include <cstdlib>
#include <random>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/segy/segy_file.h"
#include "server/io/coalescing_reader.h"
#include "server/segy/test_writer.h"

namespace shotstream::segy {
namespace {

std::unique_ptr<io::TraceFile> Write(const std::string& name,
                                      const std::vector<std::pair<int, int>>& key_fields,
                                      int byte) {
  TestFileSpec spec;
  spec.n_samples = 3;
  for (auto [ffid, other] : key_fields) {
    TestTrace t;
    t.fields.push_back({byte, 4, ffid});
    t.fields.push_back({37, 4, other});
    spec.traces.push_back(t);
  }
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  WriteSegyFile(path, spec);
  auto f = OpenSegyFile(path);
  EXPECT_TRUE(f.ok()) << f.status();
  return std::move(*f);
}

TEST(SegyScanTest, GroupsByShotAcrossFilesInFileOrder) {
  // Shot 7 spans both files and is interleaved with shot 3 in the first.
  auto a = Write("a.sgy", {{7, 0}, {3, 1}, {7, 2}, {3, 3}}, 9);
  auto b = Write("b.sgy", {{7, 4}, {-2, 5}}, 9);
  std::vector<const io::TraceFile*> files = {a.get(), b.get()};
  auto key = ParseShotKey("field_record");
  ASSERT_TRUE(key.ok());
  uint64_t last_progress = 0;
  auto c = ScanCatalog(files, *key, [&](uint64_t done, uint64_t total) {
    EXPECT_EQ(total, 6u);
    last_progress = done;
  });
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(last_progress, 6u);
  ASSERT_EQ(c->shots().size(), 3u);
  EXPECT_EQ(c->shots()[0].shot_id, -2);
  EXPECT_EQ(c->shots()[1].shot_id, 3);
  EXPECT_EQ(c->shots()[2].shot_id, 7);
  const catalog::ShotEntry* seven = c->Find(7);
  ASSERT_NE(seven, nullptr);
  auto traces = c->TracesOf(*seven);
  ASSERT_EQ(traces.size(), 3u);
  const auto& la = a->layout();
  EXPECT_EQ(traces[0], (io::TraceRef{0, la.TraceOffset(0)}));
  EXPECT_EQ(traces[1], (io::TraceRef{0, la.TraceOffset(2)}));
  EXPECT_EQ(traces[2], (io::TraceRef{1, b->layout().TraceOffset(0)}));
  EXPECT_EQ(c->Find(4), nullptr);
  EXPECT_EQ(c->n_traces(), 6u);
}

TEST(SegyScanTest, ByteKey) {
  auto a = Write("k.sgy", {{11, 0}, {11, 1}, {12, 2}}, 21);
  std::vector<const io::TraceFile*> files = {a.get()};
  auto c = ScanCatalog(files, *ParseShotKey("byte:21"));
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->shots().size(), 2u);
  EXPECT_EQ(c->Find(11)->n_traces, 2u);
}

}  // namespace
}  // namespace shotstream::segy

namespace shotstream::segy {
namespace {

// Trace header sample counts (bytes 115-116) that disagree with the binary header's:
// zero, larger and smaller. The file size agrees with the binary header, so every trace
// is read at its length; the disagreements are reported, and refused only in strict mode.
TEST(SegyScanTest, TraceHeaderSampleCountsAreInformationalUnlessStrict) {
  struct Case {
    const char* name;
    int header_ns;        // what traces 1 and 2 say
    uint64_t reported;    // traces the report counts in the default mode
  };
  for (const Case& k : {Case{"zero", 0, 0}, Case{"larger", 7, 2}, Case{"smaller", 2, 2}}) {
    SCOPED_TRACE(k.name);
    TestFileSpec spec;
    spec.n_samples = 3;
    spec.traces.resize(4);
    for (int t = 0; t < 4; ++t) {
      spec.traces[t].fields.push_back({9, 4, 1 + t / 2});  // shots 1 and 2
      spec.traces[t].samples = {float(t), float(t) + 0.5f, float(t) + 0.25f};
    }
    for (int t : {1, 2}) spec.traces[t].fields.push_back({115, 2, k.header_ns});
    const char* dir = std::getenv("TEST_TMPDIR");
    const std::string path =
        std::string(dir ? dir : "/tmp") + "/trace_ns_" + k.name + ".sgy";
    WriteSegyFile(path, spec);
    auto f = OpenSegyFile(path);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)->layout().n_samples, 3u);
    EXPECT_EQ((*f)->layout().n_traces, 4u);
    std::vector<const io::TraceFile*> files = {f->get()};
    const auto key = *ParseShotKey("field_record");

    ScanReport report;
    report.trace_length_mismatches = 99;  // Build resets it
    auto c = ScanCatalog(files, key, nullptr, catalog::kDefaultScanBlockBytes, false,
                            kScanUnitTraces, &report);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(c->shots().size(), 2u);
    EXPECT_EQ(c->Find(1)->n_traces, 2u);
    EXPECT_EQ(c->Find(2)->n_traces, 2u);
    EXPECT_EQ(report.trace_length_mismatches, k.reported);
    if (k.reported > 0) {
      EXPECT_NE(report.first_trace_length_mismatch.find("trace 1 (byte 3967)"),
                std::string::npos) << report.first_trace_length_mismatch;
      EXPECT_NE(report.first_trace_length_mismatch.find(
                    absl::StrCat("says ", k.header_ns, " samples")), std::string::npos);
    } else {
      EXPECT_TRUE(report.first_trace_length_mismatch.empty());
    }
    // The samples of every trace, at the file's length.
    std::vector<float> got(4 * 3);
    std::vector<float*> dst;
    std::vector<io::TraceRef> refs;
    for (int t = 0; t < 4; ++t) {
      refs.push_back({0, (*f)->layout().TraceOffset(t)});
      dst.push_back(got.data() + 3 * t);
    }
    ASSERT_TRUE(io::ReadTraces(files, refs, {}, dst.data(), nullptr).ok());
    for (int t = 0; t < 4; ++t) {
      EXPECT_EQ(got[3 * t], float(t));
      EXPECT_EQ(got[3 * t + 2], float(t) + 0.25f);
    }

    auto strict = ScanCatalog(files, key, nullptr, catalog::kDefaultScanBlockBytes, true);
    if (k.header_ns == 0) {
      EXPECT_TRUE(strict.ok()) << strict.status();  // 0 says nothing, even when strict
    } else {
      ASSERT_FALSE(strict.ok());
      EXPECT_EQ(strict.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(strict.status().message().find(
                    absl::StrCat("trace_ns_", k.name, ".sgy: trace 1 (byte 3967)")),
                absl::string_view::npos) << strict.status();
      EXPECT_NE(strict.status().message().find("check_trace_lengths"),
                absl::string_view::npos);
    }
  }
}

}  // namespace
}  // namespace shotstream::segy

namespace shotstream::segy {
namespace {

TEST(SegyScanTest, SourceXyKeyNumbersPositionsByFirstAppearance) {
  TestFileSpec spec;
  spec.n_samples = 2;
  // Positions (scalar -10): B, A, B, C, A -> ids 1 = B, 2 = A, 3 = C.
  const int xs[] = {200, 100, 200, 300, 100};
  for (int x : xs) {
    TestTrace t;
    t.fields = {{71, 2, -10}, {73, 4, x}, {77, 4, 5}};
    spec.traces.push_back(t);
  }
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/xy.sgy";
  WriteSegyFile(path, spec);
  auto f = OpenSegyFile(path);
  ASSERT_TRUE(f.ok());
  std::vector<const io::TraceFile*> files = {f->get()};
  auto c = ScanCatalog(files, *ParseShotKey("source_xy"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->shots().size(), 3u);
  EXPECT_EQ(c->Find(1)->n_traces, 2u);
  EXPECT_EQ(c->Find(2)->n_traces, 2u);
  EXPECT_EQ(c->Find(3)->n_traces, 1u);
  EXPECT_EQ(c->TracesOf(*c->Find(2))[0].offset, f->get()->layout().TraceOffset(1));
  ASSERT_EQ(c->source_positions().size(), 3u);
  EXPECT_EQ(c->source_positions()[0].x, 20.0);
  EXPECT_EQ(c->source_positions()[1].x, 10.0);
  EXPECT_EQ(c->source_positions()[2].y, 0.5);
}

}  // namespace
}  // namespace shotstream::segy

namespace shotstream::segy {
namespace {

TEST(SegyScanTest, PiecesOfOneFileScannedInParallelGiveTheSameCatalog) {
  TestFileSpec spec;
  spec.n_samples = 600;  // long traces: the strided path
  std::mt19937 rng(3);
  for (int t = 0; t < 100; ++t) {
    TestTrace tr;
    tr.fields = {{9, 4, static_cast<int64_t>(rng() % 9)}};
    spec.traces.push_back(tr);
  }
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/pieces.sgy";
  WriteSegyFile(path, spec);
  auto f = OpenSegyFile(path);
  ASSERT_TRUE(f.ok());
  std::vector<const io::TraceFile*> files = {f->get(), f->get()};
  const auto key = *ParseShotKey("field_record");
  auto whole = ScanCatalog(files, key);
  auto pieces = ScanCatalog(files, key, nullptr, catalog::kDefaultScanBlockBytes, true, 7);
  ASSERT_TRUE(whole.ok() && pieces.ok());
  EXPECT_EQ(whole->AllTraces(), pieces->AllTraces());
  ASSERT_EQ(whole->shots().size(), pieces->shots().size());
  for (size_t i = 0; i < whole->shots().size(); ++i) {
    EXPECT_EQ(whole->shots()[i].shot_id, pieces->shots()[i].shot_id);
    EXPECT_EQ(whole->shots()[i].n_traces, pieces->shots()[i].n_traces);
  }
}

}  // namespace
}  // namespace shotstream::segy
