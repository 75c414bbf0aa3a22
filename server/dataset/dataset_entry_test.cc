#include "server/dataset/dataset_entry.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

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
  ASSERT_TRUE(before->ReadShot(2, ShotPlan()).ok());

  // Same size, new field records (shots 11..13) and samples.
  WriteSurvey(path, 11, 3);
  auto stale = before->ReadShot(2, ShotPlan());
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
  auto shot = after->ReadShot(12, ShotPlan());
  ASSERT_TRUE(shot.ok()) << shot.status();
  EXPECT_EQ(reinterpret_cast<const float*>(shot->chunks[0].data())[0], 12.0f);
  // The old dataset, still held by whoever read through it, keeps failing: never stale.
  EXPECT_FALSE(before->ReadShot(1, ShotPlan()).ok());
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
  auto r = (*d)->ReadShot(2, ShotPlan());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  // Shot 2's first trace is trace 3, at 3600 + 3 * 256; its field record at byte 9.
  EXPECT_NE(r.status().message().find("same_mtime.sgy: byte 4377: the trace header says "
                                      "shot 6 (field_record, bytes 9-12) where the catalog has a trace "
                                      "of shot 2"),
            std::string::npos) << r.status();
}

}  // namespace
}  // namespace shotstream::dataset
