#include "server/dataset/dataset_healer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "server/segy/test_writer.h"

namespace shotstream::dataset {
namespace {

std::string TempDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + name;
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

// Shots first_id.. of 2 traces each, written whole (a new file replacing the old).
void WriteSurvey(const std::string& path, int first_id, int n_shots) {
  segy::TestFileSpec spec;
  spec.n_samples = 4;
  for (int s = 0; s < n_shots; ++s) {
    for (int t = 0; t < 2; ++t) {
      segy::TestTrace tr;
      tr.fields.push_back({9, 4, first_id + s});
      tr.samples.assign(4, static_cast<float>(first_id + s));
      spec.traces.push_back(tr);
    }
  }
  segy::WriteSegyFile(path + ".tmp", spec);
  ASSERT_EQ(std::rename((path + ".tmp").c_str(), path.c_str()), 0);
}

void Cut(const std::string& path) { ASSERT_EQ(::truncate(path.c_str(), 3600 + 100), 0); }

// Directory `name` with p1.sgy (shots 1-2) and p2.sgy (shots 3-4) cut half way, and the
// spec of dataset "d" over both.
DatasetSpec CutSurvey(const std::string& name) {
  const std::string dir = TempDir(name);
  WriteSurvey(dir + "/p1.sgy", 1, 2);
  WriteSurvey(dir + "/p2.sgy", 3, 2);
  Cut(dir + "/p2.sgy");
  DatasetSpec spec;
  spec.name = "d";
  spec.globs = {dir + "/*.sgy"};
  return spec;
}

std::string DirOf(const DatasetSpec& spec) {
  return spec.globs[0].substr(0, spec.globs[0].rfind('/'));
}

TEST(DatasetHealerTest, AFailedDatasetIsReloadedOnceItsFilesChangeAndNotBefore) {
  const DatasetSpec spec = CutSurvey("heal");
  const std::string dir = DirOf(spec);
  DatasetRegistry registry(2);
  registry.at(0).name = "d";
  ASSERT_FALSE(registry.at(0).Load(spec).ok());
  DatasetSpec other = spec;
  other.name = "e";
  other.globs = {dir + "/p1.sgy"};
  registry.at(1).name = "e";
  ASSERT_TRUE(registry.at(1).Load(other).ok());
  const std::shared_ptr<const Dataset> e_before = registry.at(1).dataset();

  DatasetHealer healer(&registry, absl::ZeroDuration());
  EXPECT_TRUE(healer.Check(false).empty());  // nothing changed since it failed
  WriteSurvey(dir + "/p2.sgy", 3, 2);        // mended
  EXPECT_EQ(healer.Check(false), std::vector<std::string>{"d"});
  registry.at(0).AwaitSettled();
  ASSERT_EQ(registry.at(0).state(), DatasetEntry::State::kReady) << registry.at(0).status();
  EXPECT_EQ(registry.at(0).dataset()->catalog().shots().size(), 4u);
  EXPECT_TRUE(healer.Check(false).empty());  // well now
  EXPECT_EQ(registry.at(1).dataset(), e_before);
}

TEST(DatasetHealerTest, ForceRetriesEveryUnwellDatasetAndSkipHealsItsLeftOutFiles) {
  DatasetSpec spec = CutSurvey("force");
  const std::string dir = DirOf(spec);
  DatasetRegistry registry(1);
  spec.skip_bad_files = true;
  registry.at(0).name = "d";
  ASSERT_TRUE(registry.at(0).Load(spec).ok());
  ASSERT_EQ(registry.at(0).dataset()->bad_files().size(), 1u);
  DatasetHealer healer(&registry, absl::ZeroDuration());
  EXPECT_EQ(healer.Check(true), std::vector<std::string>{"d"});  // SIGHUP: retried anyway
  registry.at(0).AwaitSettled();
  EXPECT_EQ(registry.at(0).dataset()->bad_files().size(), 1u);  // still cut
  WriteSurvey(dir + "/p2.sgy", 3, 2);
  EXPECT_EQ(healer.Check(false), std::vector<std::string>{"d"});
  registry.at(0).AwaitSettled();
  EXPECT_TRUE(registry.at(0).dataset()->bad_files().empty());
  EXPECT_EQ(registry.at(0).dataset()->n_files(), 2u);
}

TEST(DatasetHealerTest, ItsOwnThreadHealsWithoutBeingAsked) {
  const std::string dir = TempDir("thread");
  WriteSurvey(dir + "/p1.sgy", 1, 2);
  Cut(dir + "/p1.sgy");
  DatasetRegistry registry(1);
  DatasetSpec spec;
  spec.name = "d";
  spec.globs = {dir + "/p1.sgy"};
  registry.at(0).name = "d";
  absl::Notification ready;
  registry.at(0).set_on_change([&](const DatasetEntry& e) {
    if (e.state() == DatasetEntry::State::kReady && !ready.HasBeenNotified()) ready.Notify();
  });
  ASSERT_FALSE(registry.at(0).Load(spec).ok());
  DatasetHealer healer(&registry, absl::Milliseconds(20));
  WriteSurvey(dir + "/p1.sgy", 1, 2);
  EXPECT_TRUE(ready.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

}  // namespace
}  // namespace shotstream::dataset
