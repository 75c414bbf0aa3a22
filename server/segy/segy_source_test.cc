// The SEG-Y source on its own: files written here (server/segy/test_writer), opened through
// the Format, read with every sample form, the catalog saved, reused and rebuilt.
#include "server/segy/segy_source.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/env/fault_env.h"
#include "server/env/mem_env.h"
#include "server/segy/test_writer.h"
#include "server/source/float_read.h"
#include "server/source/trace_file_source.h"

namespace shotstream::segy {
namespace {

std::string Dir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

// Two files (IBM, then IEEE, `order`); shot s has traces t in both; sample =
// shot*1000 + trace*10 + sample; group_x 1000 t / 10 (coordinate scalar -10).
std::vector<std::string> WriteSurvey(const std::string& prefix, int ns,
                                     ByteOrder order = ByteOrder::kBigEndian) {
  std::vector<std::string> paths;
  for (int f = 0; f < 2; ++f) {
    TestFileSpec spec;
    spec.format = f == 0 ? 1 : 5;
    spec.order = order;
    spec.n_samples = ns;
    for (int shot = 1; shot <= 3; ++shot) {
      for (int t = 0; t < 4; ++t) {
        TestTrace tr;
        const int trace = f * 4 + t;
        tr.fields = {{9, 4, shot}, {81, 4, 1000 * trace}, {71, 2, -10}, {37, 4, trace * 25}};
        for (int s = 0; s < ns; ++s) tr.samples.push_back(shot * 1000 + trace * 10 + s);
        spec.traces.push_back(tr);
      }
    }
    paths.push_back(Dir() + "/" + prefix + std::to_string(f) + ".sgy");
    WriteSegyFile(paths.back(), spec);
  }
  return paths;
}

absl::StatusOr<std::unique_ptr<source::Source>> Open(const std::vector<std::string>& paths,
                                                     const std::string& catalog_path = "",
                                                     uint64_t scan_block_bytes = 1 << 20) {
  source::SourceSpec spec;
  spec.dataset = "test";
  spec.paths = paths;
  spec.catalog_path = catalog_path;
  spec.scan_block_bytes = scan_block_bytes;
  spec.io = io::IoMode::kMmap;
  return SegyFormat().open(spec);
}

uint64_t TotalReads(const source::Source& s) {
  const auto& files = dynamic_cast<const source::TraceFileSource&>(s);
  uint64_t n = 0;
  for (size_t i = 0; i < s.info().n_files; ++i) n += files.file(i).read_calls();
  return n;
}

TEST(SegySourceTest, CatalogInfoAndTheShotKeyReadsCheck) {
  auto s = Open(WriteSurvey("info", 5));
  ASSERT_TRUE(s.ok()) << s.status();
  const source::SourceInfo& info = (*s)->info();
  EXPECT_EQ(info.format, "segy");
  EXPECT_EQ(info.n_samples, 5u);
  EXPECT_EQ(info.sample_format, 1);  // the first file's
  EXPECT_TRUE(info.any_standard_field);
  ASSERT_TRUE(info.shot_key.has_value());
  EXPECT_EQ(info.shot_key->byte, 9);
  EXPECT_EQ(info.read_by, "mmap");
  EXPECT_EQ((*s)->catalog().shots().size(), 3u);
  EXPECT_EQ((*s)->catalog().TracesOf(*(*s)->catalog().Find(2)).size(), 8u);
  // Mixed formats: no common stored form; one file's traces have one.
  const auto traces = (*s)->catalog().TracesOf(*(*s)->catalog().Find(2));
  EXPECT_FALSE((*s)->FormOf(traces).has_value());
  auto ieee = (*s)->FormOf(absl::MakeConstSpan(traces).subspan(4));
  ASSERT_TRUE(ieee.has_value());
  EXPECT_EQ(ieee->format, SampleFormat::kIeeeFloat32);
  EXPECT_TRUE(ieee->mapped);
  EXPECT_EQ((*s)->Where(traces[0], 9), "byte " + std::to_string(traces[0].offset + 9));
  EXPECT_EQ((*s)->Where(traces[0], 0), "byte offset " + std::to_string(traces[0].offset));
}

TEST(SegySourceTest, ReadsDecodedStoredAndLocatedWithTheStoredHeaders) {
  auto s = Open(WriteSurvey("read", 5, ByteOrder::kLittleEndian));
  ASSERT_TRUE(s.ok()) << s.status();
  source::FloatRead f(3, (*s)->catalog().TracesOf(*(*s)->catalog().Find(3)), 1, 3);
  source::TraceRead& read = f.read;
  const std::vector<io::TraceRef>& traces = f.traces;
  auto r = (*s)->Read(read);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int t = 0; t < 8; ++t) {
    for (int k = 0; k < 3; ++k) ASSERT_EQ(f.out[3 * t + k], 3000 + t * 10 + k + 1);
  }
  auto group_x = ResolveHeader("group_x");
  EXPECT_DOUBLE_EQ(r->headers->Value(5, *group_x), 500.0);  // 5000 / 10
  uint8_t big[240];
  r->headers->BigEndianHeader(5, big);
  EXPECT_EQ(ReadHeaderInt(big, 37, 4, ByteOrder::kBigEndian), 125);  // offset, swapped
  // The IEEE file's traces located in its mapping.
  read.traces = absl::MakeConstSpan(traces).subspan(4);
  read.form = source::SampleForm::kLocate;
  auto located = (*s)->Read(read);
  ASSERT_TRUE(located.ok()) << located.status();
  ASSERT_EQ(located->stored->size(), 4u);
  EXPECT_EQ(located->stored->trace_bytes(), 3u * 4);
  EXPECT_FALSE(located->stored->big_endian());
  float first;
  std::memcpy(&first, located->stored->traces()[0], 4);
  EXPECT_EQ(first, 3000 + 40 + 1);
  EXPECT_TRUE(located->stored->Touch().ok());
}

TEST(SegySourceTest, CatalogBuiltOnceThenReusedWithoutReadingTraceHeaders) {
  const std::vector<std::string> paths = WriteSurvey("p", 5);
  const std::string catalog = Dir() + "/p.catalog";
  std::remove(catalog.c_str());
  auto first = Open(paths, catalog, /*scan_block_bytes=*/1);  // a read per header
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->info().catalog_origin.rfind("built, saved to", 0), 0u)
      << (*first)->info().catalog_origin;
  EXPECT_GE(TotalReads(**first), (*first)->catalog().n_traces());
  auto second = Open(paths, catalog);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->info().catalog_origin.rfind("reused", 0), 0u);
  // Per file: the file header and the first trace header at open, then the three
  // fingerprint reads. Nothing grows with the number of traces.
  EXPECT_EQ(TotalReads(**second), 5u * 2);
  EXPECT_EQ((*second)->catalog().AllTraces(), (*first)->catalog().AllTraces());
  // Appending to a file makes the catalog stale: rebuilt, with the reason.
  TestFileSpec more;
  more.format = 5;
  more.n_samples = 5;
  more.traces.resize(13);
  for (auto& t : more.traces) t.fields = {{9, 4, 4}};
  WriteSegyFile(paths[1], more);
  auto third = Open(paths, catalog);
  ASSERT_TRUE(third.ok());
  EXPECT_NE((*third)->info().catalog_origin.find("rebuilt: "), std::string::npos);
  EXPECT_NE((*third)->info().catalog_origin.find("p1.sgy"), std::string::npos);
  EXPECT_NE((*third)->catalog().Find(4), nullptr);
}

TEST(SegySourceTest, ACorruptCatalogIsRebuiltNeverTrusted) {
  const std::vector<std::string> paths = WriteSurvey("q", 5);
  const std::string catalog = Dir() + "/q.catalog";
  ASSERT_TRUE(Open(paths, catalog).ok());
  std::FILE* f = std::fopen(catalog.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, 60, SEEK_SET);
  std::fputc(0x5a, f);
  std::fclose(f);
  auto again = Open(paths, catalog);
  ASSERT_TRUE(again.ok());
  EXPECT_NE((*again)->info().catalog_origin.find("corrupt catalog"), std::string::npos)
      << (*again)->info().catalog_origin;
  EXPECT_EQ((*again)->catalog().shots().size(), 3u);
}

// The whole source in memory: its files, read and mapped, and its catalog, saved and
// reused, all through a MemEnv; then the faults of a disk through a FaultEnv over it.
TEST(SegySourceTest, FilesAndCatalogThroughAnEnvInMemoryAndItsFaults) {
  env::MemEnv mem;
  env::FaultEnv env(&mem);
  std::vector<std::string> paths;
  for (const std::string& written : WriteSurvey("mem", 5)) {
    paths.push_back("/survey" + written.substr(written.rfind('/')));
    mem.Put(paths.back(), *env::ReadFileToString(env::Env::Default(), written));
  }
  source::SourceSpec spec;
  spec.dataset = "test";
  spec.paths = paths;
  spec.catalog_path = "/catalogs/mem.catalog";
  spec.io = io::IoMode::kAuto;
  spec.env = &env;
  auto first = SegyFormat().open(spec);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->info().read_by, "mmap");
  EXPECT_EQ((*first)->info().catalog_origin, "built, saved to /catalogs/mem.catalog");
  EXPECT_TRUE(mem.Stat("/catalogs/mem.catalog").ok());
  auto second = SegyFormat().open(spec);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->info().catalog_origin, "reused (/catalogs/mem.catalog)");

  spec.io = io::IoMode::kPread;
  auto s = SegyFormat().open(spec);
  ASSERT_TRUE(s.ok()) << s.status();
  source::FloatRead f(2, (*s)->catalog().TracesOf(*(*s)->catalog().Find(2)), 0, 5);
  const source::TraceRead& read = f.read;
  auto r = (*s)->Read(read);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int t = 0; t < 8; ++t) {
    for (int k = 0; k < 5; ++k) ASSERT_EQ(f.out[5 * t + k], 2000 + t * 10 + k);
  }
  env.Inject(env::Fault::kReadError, "mem1.sgy", 0, 1);
  const absl::Status failed = (*s)->Read(read).status();
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable) << failed;
  EXPECT_NE(failed.message().find("/survey/mem1.sgy: read of"), std::string::npos) << failed;
  EXPECT_TRUE((*s)->Read(read).ok());

  // A catalog that cannot be saved: the source serves, and says why it was not saved.
  spec.ignore_saved_catalog = true;
  env.Inject(env::Fault::kNoSpace, "mem.catalog", 0, 1);
  auto unsaved = SegyFormat().open(spec);
  ASSERT_TRUE(unsaved.ok()) << unsaved.status();
  EXPECT_NE((*unsaved)->info().catalog_origin.find("(not saved: "), std::string::npos)
      << (*unsaved)->info().catalog_origin;
  EXPECT_NE((*unsaved)->info().catalog_origin.find("No space left"), std::string::npos);

  // A file replaced under its path (the same bytes, another file).
  mem.Put(paths[0], *env::ReadFileToString(&mem, paths[0]));
  const absl::Status changed = (*s)->CheckUnchanged(0);
  EXPECT_EQ(changed.code(), absl::StatusCode::kDataLoss) << changed;
  EXPECT_NE(changed.message().find("/survey/mem0.sgy"), std::string::npos) << changed;
}

TEST(SegySourceTest, TheFormatClaimsWhatNoOtherDoesAndChecksItsShotKeys) {
  const source::Format& f = SegyFormat();
  EXPECT_TRUE(f.claims("/any/file.bin", {}));
  EXPECT_TRUE(f.suggested_by("/data/*.sgy"));
  EXPECT_TRUE(f.suggested_by("/data/line.su"));
  EXPECT_FALSE(f.suggested_by("/data/x"));
  EXPECT_TRUE(f.check_shot_key("byte:21").ok());
  EXPECT_TRUE(f.check_shot_key("source_xy").ok());
  EXPECT_EQ(f.check_shot_key("nope").code(), absl::StatusCode::kInvalidArgument);
  source::SourceSpec spec;
  spec.paths = {Dir() + "/missing.sgy"};
  EXPECT_EQ(f.open(spec).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shotstream::segy
