#include "server/write/dataset_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "common/crc32.h"
#include "gtest/gtest.h"
#include "segy/segy_writer.h"
#include "server/env/fault_env.h"
#include "server/env/mem_env.h"
#include "server/segy/segy_file.h"

namespace shotstream::write {
namespace {

std::string TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base != nullptr ? base : "/tmp") + "/writer_XXXXXX";
  return ::mkdtemp(&dir[0]);
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

absl::string_view Bytes(const std::vector<float>& v) {
  return absl::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST(DatasetWriterTest, WritesShotsThatReadBackAsSegy) {
  const std::string dir = TempDir();
  WriteSpec spec{dir, "modelled", 2000, 5, "alice"};
  auto w = DatasetWriter::Create(spec);
  ASSERT_TRUE(w.ok()) << w.status();
  for (int64_t id : {7, 9}) {
    std::vector<float> samples(3 * 10);
    for (size_t i = 0; i < samples.size(); ++i) samples[i] = id * 100 + i * 0.5f;
    ASSERT_TRUE((*w)->BeginShot(id, 3, 10, {{"offset", {-25, 0, 25}}}).ok());
    ASSERT_TRUE((*w)->AddSamples(Bytes(samples).substr(0, 40)).ok());  // one trace
    ASSERT_TRUE((*w)->AddSamples(Bytes(samples).substr(40)).ok());     // two more
    ASSERT_TRUE((*w)->EndShot(Crc32(0, samples.data(), samples.size() * 4)).ok());
  }
  const std::string temp = (*w)->temporary_path();
  EXPECT_TRUE(Exists(temp));
  EXPECT_FALSE(Exists(WrittenPath(dir, "modelled")));  // nothing visible before Commit
  auto path = (*w)->Commit();
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_FALSE(Exists(temp));
  auto f = segy::OpenSegyFile(*path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->get()->layout().n_traces, 6u);
  EXPECT_EQ(f->get()->layout().n_samples, 10u);
  EXPECT_EQ(f->get()->layout().sample_interval_us, 2000);
  EXPECT_EQ((*w)->shots(), 2u);
  EXPECT_EQ((*w)->max_error(), 0);
}

// The writer's own file through an Env, in memory: written, read back as SEG-Y through
// the same Env, never renamed over an existing dataset; a full disk (on the appender's
// thread) and a failed sync come back from Commit naming the dataset, and the temporary
// goes with the writer.
TEST(DatasetWriterTest, WritesThroughAnEnvAndAFailedWriteLeavesNothing) {
  env::MemEnv mem;
  env::FaultEnv faults(&mem);
  ASSERT_TRUE(mem.CreateDir("/w").ok());
  auto write = [&](const std::string& name) -> absl::StatusOr<std::string> {
    WriteSpec spec{"/w", name, 2000, 5, "alice"};
    spec.env = &faults;
    spec.buffer_bytes = 256;  // several appends
    auto w = DatasetWriter::Create(spec);
    if (!w.ok()) return w.status();
    for (int64_t id : {3, 4}) {
      std::vector<float> samples(4 * 8);
      for (size_t i = 0; i < samples.size(); ++i) samples[i] = id * 100 + i;
      if (absl::Status s = (*w)->BeginShot(id, 4, 8, {}); !s.ok()) return s;
      if (absl::Status s = (*w)->AddSamples(Bytes(samples)); !s.ok()) return s;
      if (absl::Status s = (*w)->EndShot(Crc32(0, samples.data(), samples.size() * 4));
          !s.ok()) {
        return s;
      }
    }
    return (*w)->Commit();
  };
  auto path = write("line");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, "/w/line.sgy");
  segy::OpenOptions read;
  read.env = &mem;
  auto f = segy::OpenSegyFile(*path, read);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->get()->layout().n_traces, 8u);
  uint8_t b[4];  // the last sample of shot 4, big-endian IEEE: 4 * 100 + 31
  ASSERT_TRUE(f->get()->ReadAt(f->get()->size() - 4, 4, b).ok());
  const uint32_t bits = (uint32_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
  float last;
  std::memcpy(&last, &bits, 4);
  EXPECT_EQ(last, 431.0f);
  EXPECT_EQ(write("line").status().code(), absl::StatusCode::kAlreadyExists);

  faults.Inject(env::Fault::kNoSpace, "/w/.full.sgy.partial-", /*skip=*/1, /*count=*/1);
  const absl::Status full = write("full").status();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("writing dataset 'full'"), std::string::npos) << full;
  EXPECT_NE(full.message().find("No space left on device"), std::string::npos) << full;
  faults.Inject(env::Fault::kSyncError, "/w/.synced", 0, 1);
  EXPECT_EQ(write("synced").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(*mem.List("/w"), std::vector<std::string>{"line.sgy"});  // no temporary left
  EXPECT_EQ(faults.fired(), 2);
}

// Found again at a restart: the datasets this writer committed, and nothing else of the
// directory's .sgy files (one another program wrote, one of a name no write makes).
TEST(DatasetWriterTest, FindWrittenFindsOnlyWhatItWrote) {
  const std::string dir = TempDir();
  for (const char* name : {"zeta", "alpha"}) {
    auto w = DatasetWriter::Create(WriteSpec{dir, name, 4000, 5, ""});
    ASSERT_TRUE(w.ok()) << w.status();
    std::vector<float> samples(4, 1.0f);
    ASSERT_TRUE((*w)->BeginShot(1, 1, 4, {}).ok());
    ASSERT_TRUE((*w)->AddSamples(Bytes(samples)).ok());
    ASSERT_TRUE((*w)->EndShot(Crc32(0, samples.data(), 16)).ok());
    ASSERT_TRUE((*w)->Commit().ok());
  }
  // A SEG-Y of another writer: an ASCII textual header and a 3600-byte head.
  std::string other(3600 + 240 + 16, '\0');
  other.replace(0, 20, "C 1 CLIENT ACME CORP");
  std::ofstream(dir + "/acme.sgy", std::ios::binary) << other;
  std::ofstream(dir + "/bad name.sgy", std::ios::binary) << other;
  std::ofstream(dir + "/notes.txt") << "not a dataset";
  std::vector<std::string> foreign;
  const std::vector<WrittenDataset> found = FindWritten(dir, &foreign);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].name, "alpha");
  EXPECT_EQ(found[0].path, WrittenPath(dir, "alpha"));
  EXPECT_EQ(found[1].name, "zeta");
  ASSERT_EQ(foreign.size(), 2u);
  EXPECT_NE(foreign[0].find("acme.sgy: its textual header"), std::string::npos) << foreign[0];
  EXPECT_NE(foreign[1].find("bad name.sgy: not a name"), std::string::npos) << foreign[1];
}

// The same through an Env, in memory: what the writer's textual header marks is found, a
// file that cannot be read is reported with the read's error, temporaries are removed.
TEST(DatasetWriterTest, FindWrittenAndRemoveTemporariesThroughAnEnv) {
  env::MemEnv mem;
  env::FaultEnv faults(&mem);
  const std::string ours = segy::FileHeader(WrittenTextLines("b", "", 1, 1, 4, 4000, 5), 4,
                                            4000, 5);
  mem.Put("/w/b.sgy", ours);
  mem.Put("/w/a.sgy", ours);
  mem.Put("/w/other.sgy", std::string(3600, ' '));
  mem.Put("/w/.c.sgy.partial-1-2", "half");
  faults.Inject(env::Fault::kOpenError, "a.sgy", 0, 1);
  std::vector<std::string> foreign;
  std::vector<WrittenDataset> found = FindWritten("/w", &foreign, &faults);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name, "b");
  ASSERT_EQ(foreign.size(), 2u);
  EXPECT_NE(foreign[0].find("/w/a.sgy: cannot read it: "), std::string::npos) << foreign[0];
  EXPECT_NE(foreign[1].find("/w/other.sgy: its textual header"), std::string::npos);
  foreign.clear();
  EXPECT_EQ(FindWritten("/w", &foreign, &faults).size(), 2u);  // a's read goes through now
  EXPECT_EQ(RemoveTemporaries("/w", &mem), (std::vector<std::string>{".c.sgy.partial-1-2"}));
  EXPECT_EQ(mem.List("/w")->size(), 3u);
}

TEST(DatasetWriterTest, AbandonedWritesLeaveNothing) {
  const std::string dir = TempDir();
  std::string temp;
  {
    auto w = DatasetWriter::Create({dir, "gone", 1000, 5, ""});
    ASSERT_TRUE(w.ok());
    temp = (*w)->temporary_path();
    ASSERT_TRUE((*w)->BeginShot(1, 1, 4, {}).ok());
  }
  EXPECT_FALSE(Exists(temp));
  EXPECT_FALSE(Exists(WrittenPath(dir, "gone")));
  // A killed server's temporary is removed at the next start.
  std::ofstream(dir + "/.line.sgy.partial-1-0") << "x";
  std::ofstream(dir + "/keep.sgy") << "x";
  EXPECT_EQ(RemoveTemporaries(dir), std::vector<std::string>{".line.sgy.partial-1-0"});
  EXPECT_TRUE(Exists(dir + "/keep.sgy"));
}

TEST(DatasetWriterTest, RefusesWhatItCannotWriteNamingTheShot) {
  const std::string dir = TempDir();
  for (const char* bad : {"a/b", "..", ".hidden", "", "sp ace"}) {
    EXPECT_EQ(DatasetWriter::Create({dir, bad, 1000, 5, ""}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(DatasetWriter::Create({dir, "x", 1000, 2, ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::ofstream(dir + "/taken.sgy") << "x";
  EXPECT_EQ(DatasetWriter::Create({dir, "taken", 1000, 5, ""}).status().code(),
            absl::StatusCode::kAlreadyExists);

  auto w = DatasetWriter::Create({dir, "w", 1000, 5, ""});
  ASSERT_TRUE(w.ok());
  std::vector<float> s(8, 1.0f);
  ASSERT_TRUE((*w)->BeginShot(1, 2, 4, {}).ok());
  ASSERT_TRUE((*w)->AddSamples(Bytes(s)).ok());
  absl::Status crc = (*w)->EndShot(12345);
  EXPECT_EQ(crc.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(crc.message().find("shot 1"), std::string::npos) << crc;

  auto v = DatasetWriter::Create({dir, "v", 1000, 5, ""});
  ASSERT_TRUE((*v)->BeginShot(1, 2, 4, {}).ok());
  ASSERT_TRUE((*v)->AddSamples(Bytes(s)).ok());
  ASSERT_TRUE((*v)->EndShot(Crc32(0, s.data(), 32)).ok());
  absl::Status other = (*v)->BeginShot(2, 2, 5, {});
  EXPECT_EQ(other.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("shot 2 has 5 samples"), std::string::npos) << other;
  EXPECT_EQ((*v)->BeginShot(1, 2, 4, {}).code(), absl::StatusCode::kInvalidArgument);  // twice
  absl::Status header = (*v)->BeginShot(3, 2, 4, {{"ofset", {1, 2}}});
  EXPECT_NE(header.message().find("offset"), std::string::npos) << header;
  ASSERT_TRUE((*v)->BeginShot(4, 2, 4, {}).ok());
  EXPECT_EQ((*v)->AddSamples(Bytes(s).substr(0, 20)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*v)->Commit().status().code(), absl::StatusCode::kInvalidArgument);  // mid-shot
}

TEST(DatasetWriterTest, Int16AndIbmStateTheirError) {
  const std::string dir = TempDir();
  for (int format : {3, 1}) {
    auto w = DatasetWriter::Create({dir, format == 3 ? "i16" : "ibm", 1000, format, ""});
    ASSERT_TRUE(w.ok());
    std::vector<float> s = {0.25f, 1.5f, -2.75f, 40000.0f};
    ASSERT_TRUE((*w)->BeginShot(1, 1, 4, {}).ok());
    ASSERT_TRUE((*w)->AddSamples(Bytes(s)).ok());
    ASSERT_TRUE((*w)->EndShot(Crc32(0, s.data(), 16)).ok());
    if (format == 3) {
      EXPECT_EQ((*w)->max_error(), 40000 - 32767);  // saturated
    } else {
      EXPECT_LT((*w)->max_error(), 40000 * 1e-6);
    }
    ASSERT_TRUE((*w)->Commit().ok());
  }
}

}  // namespace
}  // namespace shotstream::write
