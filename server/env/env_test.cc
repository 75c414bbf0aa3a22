// One contract, two Envs: the POSIX one (in the test's temporary directory) and MemEnv
// behave alike; then FaultEnv's faults, over MemEnv.
#include "server/env/env.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/env/fault_env.h"
#include "server/env/mem_env.h"

namespace shotstream::env {
namespace {

class EnvContractTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      env_ = Env::Default();
      const char* t = std::getenv("TEST_TMPDIR");
      dir_ = std::string(t != nullptr ? t : "/tmp") + "/env_XXXXXX";
      ASSERT_NE(::mkdtemp(dir_.data()), nullptr);
    } else {
      mem_ = std::make_unique<MemEnv>();
      env_ = mem_.get();
      dir_ = "/mem";
    }
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::unique_ptr<MemEnv> mem_;
  Env* env_ = nullptr;
  std::string dir_;
};

TEST_P(EnvContractTest, WritesReadsAppendsAndLists) {
  auto w = env_->OpenWrite(Path("a.job"), WriteMode::kTruncate);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->Append("header\n").ok());
  ASSERT_TRUE((*w)->Sync().ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto a = env_->OpenWrite(Path("a.job"), WriteMode::kAppend);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->Append("done 1\n").ok());
  ASSERT_TRUE((*a)->Close().ok());
  EXPECT_EQ(*ReadFileToString(env_, Path("a.job")), "header\ndone 1\n");
  auto r = env_->OpenRead(Path("a.job"));
  ASSERT_TRUE(r.ok());
  char buf[16];
  EXPECT_EQ(*(*r)->Read(7, sizeof(buf), buf), 7u);  // to the end, no further
  EXPECT_EQ(std::string(buf, 7), "done 1\n");
  EXPECT_EQ(*(*r)->Read(100, sizeof(buf), buf), 0u);
  EXPECT_EQ(env_->Stat(Path("a.job"))->size, 14u);
  EXPECT_EQ(env_->OpenWrite(Path("a.job"), WriteMode::kCreateNew).status().code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(env_->Truncate(Path("a.job"), 7).ok());
  EXPECT_EQ(*ReadFileToString(env_, Path("a.job")), "header\n");
  ASSERT_TRUE(WriteFileAtomically(env_, Path("b.cat"), "catalog").ok());
  EXPECT_EQ(*env_->List(dir_), (std::vector<std::string>{"a.job", "b.cat"}));
}

TEST_P(EnvContractTest, ARenameOverAFileGivesItAnotherIdentity) {
  ASSERT_TRUE(WriteFileAtomically(env_, Path("x"), "old").ok());
  const FileStat before = *env_->Stat(Path("x"));
  ASSERT_TRUE(WriteFileAtomically(env_, Path("x"), "new!").ok());
  const FileStat after = *env_->Stat(Path("x"));
  EXPECT_NE(before.inode, after.inode);
  EXPECT_EQ(after.size, 4u);
  EXPECT_EQ(env_->List(dir_)->size(), 1u);  // no temporary left
}

TEST_P(EnvContractTest, AMappedFileHoldsItsBytesAndItsStatSeesATruncation) {
  ASSERT_TRUE(WriteFileAtomically(env_, Path("m.sgy"), "0123456789").ok());
  auto m = env_->OpenMapped(Path("m.sgy"), /*populate=*/true);
  ASSERT_TRUE(m.ok()) << m.status();
  const absl::Span<const uint8_t> bytes = (*m)->mapping();
  ASSERT_EQ(bytes.size(), 10u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), 4), "0123");
  const FileStat opened = *(*m)->Stat();
  EXPECT_EQ(opened.size, 10u);
  EXPECT_TRUE(opened.regular);
  EXPECT_EQ(opened.inode, env_->Stat(Path("m.sgy"))->inode);
  ASSERT_TRUE(env_->Truncate(Path("m.sgy"), 3).ok());
  EXPECT_EQ((*m)->Stat()->size, 3u);  // what a mapped read checks before it touches bytes
  auto plain = env_->OpenRead(Path("m.sgy"));
  EXPECT_TRUE((*plain)->mapping().empty());
  ASSERT_TRUE(WriteFileAtomically(env_, Path("empty"), "").ok());
  auto e = env_->OpenMapped(Path("empty"), false);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE((*e)->mapping().empty());
  EXPECT_TRUE(env_->FilesystemType(Path("m.sgy")).ok());
  EXPECT_EQ(env_->OpenMapped(Path("none"), false).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(EnvContractTest, AHeaderWrittenLastACopyAndARenameThatNeverReplaces) {
  ASSERT_TRUE(env_->CreateDir(Path("parts")).ok());
  ASSERT_TRUE(env_->CreateDir(Path("parts")).ok());  // an existing one is fine
  EXPECT_TRUE(env_->Stat(Path("parts"))->directory);
  EXPECT_TRUE(env_->List(Path("parts"))->empty());
  ASSERT_TRUE(WriteFileAtomically(env_, Path("parts/p0"), "HHHHbody-0").ok());
  auto w = env_->OpenWrite(Path("joined"), WriteMode::kCreateNew);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->Append("????").ok());
  auto in = env_->OpenRead(Path("parts/p0"));
  ASSERT_TRUE(in.ok());
  ASSERT_TRUE((*w)->AppendFrom(**in, 4, 6).ok());
  ASSERT_TRUE((*w)->AppendFrom(**in, 4, 4).ok());
  ASSERT_TRUE((*w)->WriteAt(0, "head").ok());
  const absl::Status past = (*w)->AppendFrom(**in, 8, 5);  // 2 bytes are there, not 5
  EXPECT_EQ(past.code(), absl::StatusCode::kDataLoss) << past;
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(ReadFileToString(env_, Path("joined"))->substr(0, 14), "headbody-0body");
  EXPECT_FALSE(env_->Stat(Path("joined"))->directory);
  ASSERT_TRUE(WriteFileAtomically(env_, Path("other"), "x").ok());
  const absl::Status refused = env_->RenameNoReplace(Path("other"), Path("joined"));
  EXPECT_EQ(refused.code(), absl::StatusCode::kAlreadyExists) << refused;
  EXPECT_EQ(*ReadFileToString(env_, Path("other")), "x");  // both as they were
  ASSERT_TRUE(env_->RenameNoReplace(Path("other"), Path("renamed")).ok());
  EXPECT_EQ(env_->Stat(Path("other")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(env_->RemoveDir(Path("parts")).ok());  // not empty
  ASSERT_TRUE(env_->Remove(Path("parts/p0")).ok());
  ASSERT_TRUE(env_->RemoveDir(Path("parts")).ok());
  EXPECT_EQ(env_->Stat(Path("parts")).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(EnvContractTest, MissingFilesAreNotFoundNamingThePath) {
  auto r = env_->OpenRead(Path("none"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(Path("none")), std::string::npos) << r.status();
  EXPECT_EQ(env_->Stat(Path("none")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->Remove(Path("none")).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->Rename(Path("none"), Path("y")).code(), absl::StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(PosixAndMemory, EnvContractTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Posix" : "Memory"; });

TEST(EnvTest, WithoutPathLeavesWhatFollowsTheFilesName) {
  const absl::Status s = absl::UnavailableError("/d/a.sgy: read at byte 0: Input/output error");
  EXPECT_EQ(WithoutPath(s, "/d/a.sgy"), "read at byte 0: Input/output error");
  EXPECT_EQ(WithoutPath(s, "/d/a"), s.message());  // another file's name: left whole
  EXPECT_EQ(WithoutPath(s, "/d/b.sgy"), s.message());
}

TEST(MemEnvTest, TheClockMovesOnlyWhenTold) {
  MemEnv env;
  const absl::Time t0 = env.Now();
  env.Put("/d/f", "x");
  EXPECT_EQ(env.Stat("/d/f")->modified, t0);
  env.Advance(absl::Seconds(5));
  EXPECT_EQ(env.Now(), t0 + absl::Seconds(5));
  auto w = env.OpenWrite("/d/f", WriteMode::kAppend);
  ASSERT_TRUE((*w)->Append("y").ok());
  EXPECT_EQ(env.Stat("/d/f")->modified, t0 + absl::Seconds(5));
}

TEST(FaultEnvTest, ReadErrorsShortReadsAndChangesUnderARead) {
  MemEnv mem;
  FaultEnv env(&mem);
  mem.Put("/d/shots.sgy", std::string(100, 'a'));
  env.Inject(Fault::kReadError, "shots", /*skip=*/1, /*count=*/1);
  auto r = env.OpenRead("/d/shots.sgy");
  ASSERT_TRUE(r.ok());
  char buf[100];
  EXPECT_EQ(*(*r)->Read(0, 10, buf), 10u);  // skipped
  auto failed = (*r)->Read(0, 10, buf);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("/d/shots.sgy: read at byte 0"), std::string::npos);
  EXPECT_EQ(*(*r)->Read(0, 10, buf), 10u);  // once only
  env.Inject(Fault::kShortRead, "shots", 0, 1);
  EXPECT_EQ(*(*r)->Read(0, 100, buf), 50u);
  env.Inject(Fault::kChangedUnderRead, "shots", 0, 1, [&] { mem.Put("/d/shots.sgy", "bb"); });
  EXPECT_EQ(*(*r)->Read(0, 100, buf), 100u);  // the open file still reads its own bytes
  auto again = env.OpenRead("/d/shots.sgy");
  EXPECT_EQ(*(*again)->Read(0, 100, buf), 2u);  // the path names the new file
  EXPECT_EQ(env.fired(), 3);
}

TEST(FaultEnvTest, NoSpaceSyncAndOpenErrors) {
  MemEnv mem;
  FaultEnv env(&mem);
  env.Inject(Fault::kNoSpace, ".job");
  env.Inject(Fault::kSyncError, ".job", 0, 1);
  auto w = env.OpenWrite("/j/a.job", WriteMode::kAppend);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->Append("x").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*w)->Sync().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE((*w)->Sync().ok());
  env.Clear();
  EXPECT_TRUE((*w)->Append("x").ok());
  env.Inject(Fault::kOpenError, "b.cat", 0, 1);
  EXPECT_EQ(WriteFileAtomically(&env, "/j/b.cat", "c").code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(WriteFileAtomically(&env, "/j/b.cat", "c").ok());
}

}  // namespace
}  // namespace shotstream::env
