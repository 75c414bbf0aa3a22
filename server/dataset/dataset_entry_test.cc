#include "server/dataset/dataset_entry.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "server/segy/test_writer.h"

namespace shotstream::dataset {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

// Shots first_id.. of 3 traces each, every sample the shot id.
void WriteSurvey(const std::string& path, int first_id, int n_shots) {
  segy::TestFileSpec spec;
  spec.n_samples = 4;
  for (int s = 0; s < n_shots; ++s) {
    for (int t = 0; t < 3; ++t) {
      segy::TestTrace tr;
      tr.fields.push_back({9, 4, first_id + s});
      tr.samples.assign(4, static_cast<float>(first_id + s));
      spec.traces.push_back(tr);
    }
  }
  // Written to a temporary name and copied over the original in place (same inode), as
  // a tool rewriting a file would.
  const std::string tmp = path + ".new";
  segy::WriteSegyFile(tmp, spec);
  ASSERT_EQ(std::system(("cat '" + tmp + "' > '" + path + "'").c_str()), 0);
  ::unlink(tmp.c_str());
}

TEST(DatasetEntryTest, FilesChangedUnderAReadAreRebuiltNeverServedStale) {
  const std::string path = TempPath("rewritten.sgy");
  WriteSurvey(path, 1, 3);
  DatasetSpec spec;
  spec.name = "d";
  spec.globs = {path};
  DatasetEntry entry;
  entry.name = "d";
  std::atomic<int> changes{0};
  entry.set_on_change([&](const DatasetEntry&) { ++changes; });
  ASSERT_TRUE(entry.Load(spec).ok());
  ASSERT_EQ(entry.state(), DatasetEntry::State::kReady);
  std::shared_ptr<const Dataset> before = entry.dataset();
  ASSERT_TRUE(before->ReadShot(2, ReadPlan()).ok());

  // Same size, new field records (shots 11..13) and samples.
  WriteSurvey(path, 11, 3);
  auto stale = before->ReadShot(2, ReadPlan());
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(stale.status().message().find("rewritten.sgy: changed since its catalog was built"),
            std::string::npos) << stale.status();
  // The dataset leaves READY at once, and is READY again with the new catalog.
  EXPECT_NE(entry.state(), DatasetEntry::State::kFailed);
  entry.AwaitSettled();
  ASSERT_EQ(entry.state(), DatasetEntry::State::kReady) << entry.status();
  EXPECT_GE(changes.load(), 2);  // rebuilding, then ready
  std::shared_ptr<const Dataset> after = entry.dataset();
  ASSERT_NE(after, before);
  EXPECT_EQ(after->catalog().Find(2), nullptr);
  auto shot = after->ReadShot(12, ReadPlan());
  ASSERT_TRUE(shot.ok()) << shot.status();
  EXPECT_EQ(reinterpret_cast<const float*>(shot->chunks[0].data())[0], 12.0f);
  // The old dataset, still held by whoever read through it, keeps failing: never stale.
  EXPECT_FALSE(before->ReadShot(1, ReadPlan()).ok());
}

TEST(DatasetEntryTest, LoadingUntilItsFirstLoadEndsThenReadyWithItsProgress) {
  const std::string path = TempPath("first_load.sgy");
  WriteSurvey(path, 1, 5);
  DatasetSpec spec;
  spec.name = "first";
  spec.globs = {path};
  DatasetEntry entry;
  entry.name = "first";
  entry.MarkLoading();
  EXPECT_EQ(entry.state(), DatasetEntry::State::kLoading);
  EXPECT_EQ(entry.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(entry.status().message().find("dataset 'first' is loading"), std::string::npos)
      << entry.status();
  EXPECT_EQ(entry.dataset(), nullptr);
  EXPECT_EQ(entry.progress().traces_total, 0u);
  std::vector<std::pair<uint64_t, uint64_t>> told;
  ASSERT_TRUE(entry.Load(spec, [&](uint64_t done, uint64_t total) {
                     told.emplace_back(done, total);
                   }).ok());
  EXPECT_EQ(entry.state(), DatasetEntry::State::kReady);
  ASSERT_FALSE(told.empty());  // the caller's progress still hears the scan
  EXPECT_EQ(entry.progress().traces_done, told.back().first);
  EXPECT_EQ(entry.progress().traces_total, 15u);
  // A first load that fails ends LOADING too: FAILED.
  DatasetEntry missing;
  missing.name = "missing";
  missing.MarkLoading();
  spec.globs = {TempPath("no_such_file.sgy")};
  EXPECT_FALSE(missing.Load(spec).ok());
  EXPECT_EQ(missing.state(), DatasetEntry::State::kFailed);
}

TEST(DatasetEntryTest, ATraceHeaderWhoseShotKeyMovedIsCaughtEvenWithTheSameMtime) {
  const std::string path = TempPath("same_mtime.sgy");
  WriteSurvey(path, 1, 2);
  DatasetSpec spec;
  spec.name = "d";
  spec.globs = {path};
  auto d = Dataset::Load(spec);
  ASSERT_TRUE(d.ok());
  // Rewrite, then put the old mtime back: only the header check can tell.
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  WriteSurvey(path, 5, 2);
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  auto r = (*d)->ReadShot(2, ReadPlan());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  // Shot 2's first trace is trace 3, at 3600 + 3 * 256; its field record at byte 9.
  EXPECT_NE(r.status().message().find("same_mtime.sgy: byte 4377: the trace header says "
                                      "shot 6 (field_record, bytes 9-12) where the catalog has a trace "
                                      "of shot 2"),
            std::string::npos) << r.status();
}


// Cuts `path` to `bytes`: a copy that stopped half way.
void Truncate(const std::string& path, off_t bytes) { ASSERT_EQ(::truncate(path.c_str(), bytes), 0); }

TEST(DatasetEntryTest, AFailedDatasetReloadedOnceItsFileIsMendedIsReady) {
  const std::string dir = TempPath("mended");
  ::mkdir(dir.c_str(), 0755);
  WriteSurvey(dir + "/p1.sgy", 1, 2);
  WriteSurvey(dir + "/p2.sgy", 3, 2);
  Truncate(dir + "/p2.sgy", 3600 + 256 + 100);
  DatasetSpec spec;
  spec.name = "d";
  spec.globs = {dir + "/*.sgy"};
  DatasetEntry entry;
  entry.name = "d";
  std::atomic<int> told{0};
  entry.set_on_change([&](const DatasetEntry&) { ++told; });
  const absl::Status failed = entry.Load(spec);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("p2.sgy"), std::string::npos) << failed;
  EXPECT_EQ(entry.state(), DatasetEntry::State::kFailed);

  WriteSurvey(dir + "/p2.sgy", 3, 2);
  entry.Reload(entry.spec(), "its files changed");
  entry.AwaitSettled();
  ASSERT_EQ(entry.state(), DatasetEntry::State::kReady) << entry.status();
  EXPECT_EQ(entry.last_load(), "loaded again");
  EXPECT_EQ(told.load(), 2);  // REBUILDING, then READY
  EXPECT_EQ(entry.dataset()->catalog().shots().size(), 4u);
}

TEST(DatasetEntryTest, AReadyDatasetKeepsServingWhileItsNewSpecLoads) {
  const std::string dir = TempPath("respec");
  ::mkdir(dir.c_str(), 0755);
  WriteSurvey(dir + "/a.sgy", 1, 2);
  WriteSurvey(dir + "/b.sgy", 5, 3);
  DatasetSpec spec;
  spec.name = "d";
  spec.globs = {dir + "/a.sgy"};
  DatasetEntry entry;
  entry.name = "d";
  std::atomic<int> told{0};
  std::atomic<int> served_meanwhile{0};
  entry.set_on_change([&](const DatasetEntry& e) {
    ++told;
    if (e.dataset() != nullptr) ++served_meanwhile;
  });
  ASSERT_TRUE(entry.Load(spec).ok());
  std::shared_ptr<const Dataset> before = entry.dataset();
  spec.globs = {dir + "/b.sgy"};
  entry.Reload(spec, "SIGHUP");
  // No REBUILDING in between: whoever asks gets the old dataset or the new one.
  std::shared_ptr<const Dataset> meanwhile = entry.dataset();
  ASSERT_NE(meanwhile, nullptr);
  entry.AwaitSettled();
  EXPECT_EQ(told.load(), 1);  // only the end
  EXPECT_EQ(entry.last_load(), "reloaded");
  ASSERT_EQ(entry.state(), DatasetEntry::State::kReady);
  EXPECT_NE(entry.dataset(), before);
  EXPECT_EQ(entry.dataset()->catalog().shots().size(), 3u);
  EXPECT_EQ(entry.spec().globs, std::vector<std::string>{dir + "/b.sgy"});
  EXPECT_TRUE(before->ReadShot(1, ReadPlan()).ok());  // a stream holding it reads on
}

TEST(DatasetEntryTest, SkipServesTheGoodFilesAndListsTheBadOnes) {
  const std::string dir = TempPath("skip");
  ::mkdir(dir.c_str(), 0755);
  WriteSurvey(dir + "/p1.sgy", 1, 2);
  WriteSurvey(dir + "/p2.sgy", 3, 2);
  WriteSurvey(dir + "/p3.sgy", 5, 2);
  Truncate(dir + "/p2.sgy", 3600 + 256 + 100);
  { std::FILE* f = std::fopen((dir + "/p4.sgy").c_str(), "w"); ASSERT_NE(f, nullptr); std::fclose(f); }
  DatasetSpec spec;
  spec.name = "d";
  spec.globs = {dir + "/*.sgy"};
  spec.skip_bad_files = true;
  auto d = Dataset::Load(spec);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->n_files(), 2u);
  EXPECT_EQ((*d)->catalog().shots().size(), 4u);
  ASSERT_EQ((*d)->bad_files().size(), 2u);
  EXPECT_EQ((*d)->bad_files()[0].rfind(dir + "/p2.sgy: ", 0), 0u) << (*d)->bad_files()[0];
  EXPECT_EQ((*d)->bad_files()[1].rfind(dir + "/p4.sgy: ", 0), 0u) << (*d)->bad_files()[1];
  auto shot = (*d)->ReadShot(5, ReadPlan());
  ASSERT_TRUE(shot.ok()) << shot.status();
  // Nothing good left: FAILED, naming each.
  spec.globs = {dir + "/p2.sgy", dir + "/p4.sgy"};
  auto none = Dataset::Load(spec);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("every file is bad"), std::string::npos) << none.status();
  // fail (the default): the first bad file fails the dataset.
  spec.globs = {dir + "/*.sgy"};
  spec.skip_bad_files = false;
  EXPECT_FALSE(Dataset::Load(spec).ok());
}

}  // namespace
}  // namespace shotstream::dataset
