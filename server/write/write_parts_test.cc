#include "server/write/write_parts.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/crc32.h"
#include "gtest/gtest.h"
#include "server/env/fault_env.h"
#include "server/env/mem_env.h"
#include "server/segy/segy_file.h"
#include "server/write/dataset_writer.h"

namespace shotstream::write {
namespace {

std::string TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base != nullptr ? base : "/tmp") + "/parts_XXXXXX";
  return ::mkdtemp(&dir[0]);
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// Writes part `index` of write "w1" of dataset "line" with `ids` (3 traces of 10 samples
// each, sample value = id * 100 + i) as WriteSession does: the ids, then the part.
void WritePart(const std::string& dir, uint32_t index, std::vector<int64_t> ids,
               int format = 5, double interval = 2000, uint32_t n_samples = 10,
               env::Env* env = env::Env::Default()) {
  const std::string parts = PartsDir(dir, "line", "w1");
  ASSERT_TRUE(MakePartsDir(parts, env).ok());
  WriteSpec spec{parts, PartName(index), interval, format, "bob"};
  spec.replace = true;
  spec.env = env;
  auto w = DatasetWriter::Create(spec);
  ASSERT_TRUE(w.ok()) << w.status();
  for (int64_t id : ids) {
    std::vector<float> s(3 * n_samples);
    for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<float>(id * 100 + i);
    ASSERT_TRUE((*w)->BeginShot(id, 3, n_samples, {}).ok());
    ASSERT_TRUE((*w)->AddSamples(absl::string_view(reinterpret_cast<const char*>(s.data()),
                                                   s.size() * 4)).ok());
    ASSERT_TRUE((*w)->EndShot(Crc32(0, s.data(), s.size() * 4)).ok());
  }
  ASSERT_TRUE(WritePartIds(parts, index, (*w)->shot_ids(), env).ok());
  ASSERT_TRUE((*w)->Commit().ok());
}

JoinSpec Spec(const std::string& dir, uint32_t count) {
  return JoinSpec{dir, "line", "w1", count, 2000, 5, "bob"};
}

TEST(WritePartsTest, JoinsPartsInIndexOrderIntoOneFile) {
  const std::string dir = TempDir();
  WritePart(dir, 1, {30, 40});
  WritePart(dir, 0, {10, 20});
  WritePart(dir, 2, {5});
  WritePart(dir, 1, {30, 40});  // a retried part replaces the earlier one
  auto joined = JoinParts(Spec(dir, 3));
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(joined->path, WrittenPath(dir, "line"));
  EXPECT_EQ(joined->shots, 5u);
  EXPECT_EQ(joined->traces, 15u);
  EXPECT_EQ(joined->sample_bytes, 15u * 10 * 4);
  EXPECT_FALSE(Exists(PartsDir(dir, "line", "w1")));  // the parts are gone
  auto f = segy::OpenSegyFile(joined->path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->get()->layout().n_traces, 15u);
  EXPECT_EQ(f->get()->layout().n_samples, 10u);
  // Trace 6 is the first of shot 30 (part 1 after part 0's two shots): its first sample.
  std::ifstream in(joined->path, std::ios::binary);
  in.seekg(3600 + 6 * (240 + 40) + 240);
  unsigned char b[4];
  in.read(reinterpret_cast<char*>(b), 4);
  const uint32_t bits = (uint32_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
  float v;
  std::memcpy(&v, &bits, 4);
  EXPECT_EQ(v, 3000.0f);
  // Committed twice: the dataset exists.
  EXPECT_EQ(JoinParts(Spec(dir, 3)).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(WritePartsTest, NamesMissingPartsAndKeepsThoseWritten) {
  const std::string dir = TempDir();
  WritePart(dir, 0, {1});
  WritePart(dir, 2, {3});
  auto joined = JoinParts(Spec(dir, 4));
  ASSERT_EQ(joined.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(joined.status().message().find("2 of its 4 parts are not written (parts 1, 3 "
                                           "missing)"),
            std::string::npos)
      << joined.status();
  EXPECT_NE(joined.status().message().find("'w1'"), std::string::npos);
  EXPECT_TRUE(Exists(PartsDir(dir, "line", "w1") + "/part-000000.sgy"));
  EXPECT_FALSE(Exists(WrittenPath(dir, "line")));
  WritePart(dir, 1, {2});
  WritePart(dir, 3, {4});
  EXPECT_TRUE(JoinParts(Spec(dir, 4)).ok());
}

TEST(WritePartsTest, RefusesAShotInTwoPartsAndPartsThatDiffer) {
  const std::string dir = TempDir();
  WritePart(dir, 0, {1, 2});
  WritePart(dir, 1, {2, 3});
  auto twice = JoinParts(Spec(dir, 2));
  ASSERT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("shot 2 is in parts 0 and 1"), std::string::npos)
      << twice.status();
  WritePart(dir, 1, {3}, 5, 2000, 12);  // other sample count
  auto other = JoinParts(Spec(dir, 2));
  ASSERT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("part 1 has 12 samples"), std::string::npos)
      << other.status();
  WritePart(dir, 1, {3});
  JoinSpec ibm = Spec(dir, 2);
  ibm.format = 1;  // the commit says another format than the parts were written in
  EXPECT_EQ(JoinParts(ibm).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(JoinParts(Spec(dir, 2)).ok());
  for (const std::string& n : {std::string(".line.sgy.partial-1-join-0")}) {
    EXPECT_FALSE(Exists(dir + "/" + n));
  }
}

// The same join through an Env, in memory: the parts copied into one file read back
// through it; a full disk during the copy is RESOURCE_EXHAUSTED, the parts stay for a
// retry and no temporary is left; a restart removes the parts directories.
TEST(WritePartsTest, JoinsPartsThroughAnEnvAndAFullDiskKeepsTheParts) {
  env::MemEnv mem;
  env::FaultEnv faults(&mem);
  ASSERT_TRUE(mem.CreateDir("/w").ok());
  WritePart("/w", 0, {10, 20}, 5, 2000, 10, &faults);
  WritePart("/w", 1, {30}, 5, 2000, 10, &faults);
  JoinSpec spec = Spec("/w", 2);
  spec.env = &faults;
  faults.Inject(env::Fault::kNoSpace, "-join-", /*skip=*/1, /*count=*/1);  // the 2nd part
  const absl::Status full = JoinParts(spec).status();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("copying into /w/.line.sgy.partial-"), std::string::npos)
      << full;
  EXPECT_EQ(*mem.List("/w"), std::vector<std::string>{".line.parts-w1"});
  auto joined = JoinParts(spec);
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(joined->traces, 9u);
  segy::OpenOptions read;
  read.env = &mem;
  auto f = segy::OpenSegyFile(joined->path, read);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->get()->layout().n_traces, 9u);
  uint8_t b[4];  // trace 6, the first of shot 30: its first sample, big-endian 3000.0
  ASSERT_TRUE(f->get()->ReadAt(3600 + 6 * (240 + 40) + 240, 4, b).ok());
  const uint32_t bits = (uint32_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
  float v;
  std::memcpy(&v, &bits, 4);
  EXPECT_EQ(v, 3000.0f);
  EXPECT_EQ(*mem.List("/w"), std::vector<std::string>{"line.sgy"});  // the parts are gone
  WritePart("/w", 0, {1}, 5, 2000, 10, &faults);
  EXPECT_EQ(RemoveParts("/w", &faults), std::vector<std::string>{".line.parts-w1"});
  EXPECT_EQ(*mem.List("/w"), std::vector<std::string>{"line.sgy"});
}

TEST(WritePartsTest, ARestartRemovesPartsDirectories) {
  const std::string dir = TempDir();
  WritePart(dir, 0, {1});
  std::ofstream(dir + "/.x.parts-y.sgy.partial-1-0") << "x";  // a file, not parts
  EXPECT_EQ(RemoveParts(dir), std::vector<std::string>{".line.parts-w1"});
  EXPECT_FALSE(Exists(PartsDir(dir, "line", "w1")));
  EXPECT_TRUE(Exists(dir + "/.x.parts-y.sgy.partial-1-0"));
}

// A part's shot ids through an Env: written whole (a retried part's file replaced), read
// back in order; a full disk is RESOURCE_EXHAUSTED naming the file; a torn file DATA_LOSS.
TEST(WritePartsTest, PartIdsThroughAnEnv) {
  env::MemEnv mem;
  env::FaultEnv faults(&mem);
  ASSERT_TRUE(WritePartIds("/w/.d.parts-x", 3, {30, 10, 20}, &faults).ok());
  ASSERT_TRUE(WritePartIds("/w/.d.parts-x", 3, {7, 5}, &faults).ok());  // retried
  EXPECT_EQ(*ReadPartIds("/w/.d.parts-x", 3, &mem), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(mem.List("/w/.d.parts-x")->size(), 1u);  // no temporary left
  faults.Inject(env::Fault::kNoSpace, ".ids");
  absl::Status full = WritePartIds("/w/.d.parts-x", 4, {1}, &faults);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("part-000004.ids"), std::string::npos) << full;
  EXPECT_EQ(mem.List("/w/.d.parts-x")->size(), 1u);  // nor after a failure
  mem.Put("/w/.d.parts-x/part-000005.ids", "12345");
  EXPECT_EQ(ReadPartIds("/w/.d.parts-x", 5, &mem).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace shotstream::write
