#include "server/catalog/catalog_store.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/env/fault_env.h"
#include "server/env/mem_env.h"
#include "server/segy/segy_file.h"
#include "server/segy/segy_scan.h"
#include "server/segy/test_writer.h"

namespace shotstream::catalog {
namespace {

std::string Dir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d ? d : "/tmp";
}

// Each test runs twice: on disk (the POSIX Env) and in memory (MemEnv, the SEG-Y files
// put there with the bytes the test writer wrote), through a FaultEnv passing all calls.
class CatalogStoreTest : public ::testing::TestWithParam<bool> {
 protected:
  bool in_memory() const { return GetParam(); }
  std::string Place(const std::string& name) const {
    return (in_memory() ? std::string("/mem") : Dir()) + "/" + name;
  }

  void SetUp() override {
    base_ = in_memory() ? static_cast<env::Env*>(&mem_) : env::Env::Default();
    env_ = std::make_unique<env::FaultEnv>(base_);
    for (int f = 0; f < 2; ++f) {
      segy::TestFileSpec spec;
      spec.n_samples = 4;
      for (int t = 0; t < 10; ++t) {
        segy::TestTrace tr;
        tr.fields.push_back({9, 4, (t * 7 + f) % 4});
        spec.traces.push_back(tr);
      }
      const std::string path = Dir() + "/cs" + std::to_string(f) + ".sgy";
      segy::WriteSegyFile(path, spec);
      const std::string place = Place("cs" + std::to_string(f) + ".sgy");
      if (in_memory()) mem_.Put(place, *env::ReadFileToString(env::Env::Default(), path));
      segy::OpenOptions options;
      options.env = env_.get();
      owned_.push_back(std::move(*segy::OpenSegyFile(place, options)));
      files_.push_back(owned_.back().get());
    }
    auto c = segy::ScanCatalog(files_, *segy::ParseShotKey("field_record"));
    ASSERT_TRUE(c.ok());
    catalog_ = *c;
    auto s = DescribeSource(files_, "field_record");
    ASSERT_TRUE(s.ok());
    source_ = *s;
    path_ = Place("line.catalog");
    ASSERT_TRUE(SaveCatalog(path_, source_, catalog_, env_.get()).ok());
  }

  absl::Status Save(const Catalog& catalog) {
    return SaveCatalog(path_, source_, catalog, env_.get());
  }
  absl::StatusOr<Catalog> Load(const CatalogSource& expected) {
    return LoadCatalog(path_, expected, env_.get());
  }
  std::string ReadFile() { return *env::ReadFileToString(base_, path_); }
  void WriteFile(const std::string& data) {
    ASSERT_TRUE(env::WriteFileAtomically(base_, path_, data).ok());
  }

  env::MemEnv mem_;
  env::Env* base_ = nullptr;
  std::unique_ptr<env::FaultEnv> env_;
  std::vector<std::unique_ptr<io::TraceFile>> owned_;
  std::vector<const io::TraceFile*> files_;
  Catalog catalog_;
  CatalogSource source_;
  std::string path_;
};

TEST_P(CatalogStoreTest, SaveLoadEqual) {
  auto loaded = Load(source_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->shots().size(), catalog_.shots().size());
  for (size_t i = 0; i < catalog_.shots().size(); ++i) {
    EXPECT_EQ(loaded->shots()[i].shot_id, catalog_.shots()[i].shot_id);
    EXPECT_EQ(loaded->shots()[i].first_segment, catalog_.shots()[i].first_segment);
    EXPECT_EQ(loaded->shots()[i].n_traces, catalog_.shots()[i].n_traces);
  }
  EXPECT_EQ(loaded->AllTraces(), catalog_.AllTraces());
  EXPECT_EQ(loaded->n_traces(), 20u);
}

TEST_P(CatalogStoreTest, SourcePositionsRoundTrip) {
  Catalog with = *Catalog::FromParts(catalog_.shots(), catalog_.segments(),
                                     std::vector<uint32_t>(catalog_.list().begin(),
                                                           catalog_.list().end()),
                                     catalog_.files(), {{0, 1.5, -2.5}, {1, 3.25, 4.0}});
  ASSERT_TRUE(Save(with).ok());
  auto loaded = Load(source_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->source_positions().size(), 2u);
  EXPECT_EQ(loaded->source_positions()[1].x, 3.25);
  EXPECT_EQ(loaded->source_positions()[0].y, -2.5);
}

TEST_P(CatalogStoreTest, EveryBitFlipIsCaughtAsDataLoss) {
  const std::string good = ReadFile();
  for (size_t i = 0; i < good.size(); i += 7) {
    std::string bad = good;
    bad[i] ^= 0x10;
    WriteFile(bad);
    auto loaded = Load(source_);
    ASSERT_FALSE(loaded.ok()) << "flip at byte " << i;
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << i << loaded.status();
  }
}

TEST_P(CatalogStoreTest, TruncationAndOtherVersionAreDataLoss) {
  const std::string good = ReadFile();
  for (size_t n : {size_t{0}, size_t{5}, good.size() / 2, good.size() - 1}) {
    WriteFile(good.substr(0, n));
    EXPECT_EQ(Load(source_).status().code(), absl::StatusCode::kDataLoss) << n;
  }
  std::string other = good;
  other[8] = 99;  // another version
  WriteFile(other);
  auto s = Load(source_).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("version"), absl::string_view::npos);
}

TEST_P(CatalogStoreTest, StaleSourceIsRefusedWithTheReason) {
  CatalogSource changed = source_;
  changed.files[1].size += 240;
  auto s = Load(changed).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("cs1.sgy: size changed"), absl::string_view::npos) << s;

  changed = source_;
  changed.files[0].mtime_ns += 1;
  EXPECT_NE(Load(changed).status().message().find("modification time"),
            absl::string_view::npos);
  changed = source_;
  changed.files[0].fingerprint ^= 1;
  EXPECT_NE(Load(changed).status().message().find("fingerprint"),
            absl::string_view::npos);
  changed = source_;
  changed.files.pop_back();
  EXPECT_EQ(Load(changed).status().code(), absl::StatusCode::kFailedPrecondition);
  changed = source_;
  changed.shot_key = "inline";
  EXPECT_NE(Load(changed).status().message().find("shot key"),
            absl::string_view::npos);
  EXPECT_EQ(LoadCatalog(Place("none.catalog"), source_, env_.get()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(CatalogStoreTest, FingerprintReadsAreFewAndFixed) {
  const uint64_t before = files_[0]->read_calls();
  ASSERT_TRUE(DescribeSource(files_, "field_record").ok());
  EXPECT_EQ(files_[0]->read_calls() - before, 3u);  // file header, first and last trace header
}

// A save that fails (a full disk, a sync's I/O error, an open's) says so naming the file,
// leaves no temporary, and leaves the catalog saved before it whole; a load that cannot
// open the file is UNAVAILABLE (a retry may pass), not a corrupt catalog.
TEST_P(CatalogStoreTest, AFailedSaveLeavesTheSavedCatalogWholeAndNoTemporary) {
  const std::string good = ReadFile();
  env_->Inject(env::Fault::kNoSpace, "line.catalog", /*skip=*/1, /*count=*/1);
  absl::Status s = Save(catalog_);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("line.catalog"), absl::string_view::npos) << s;
  env_->Inject(env::Fault::kSyncError, "line.catalog", 0, 1);
  EXPECT_EQ(Save(catalog_).code(), absl::StatusCode::kUnavailable);
  env_->Inject(env::Fault::kOpenError, "line.catalog", 0, 1);
  EXPECT_EQ(Save(catalog_).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ReadFile(), good);
  const std::string dir = path_.substr(0, path_.rfind('/'));
  const absl::StatusOr<std::vector<std::string>> names = base_->List(dir);
  ASSERT_TRUE(names.ok()) << names.status();
  for (const std::string& name : *names) {
    EXPECT_EQ(name.find("line.catalog."), std::string::npos) << "left behind: " << name;
  }
  env_->Inject(env::Fault::kOpenError, "line.catalog", 0, 1);
  EXPECT_EQ(Load(source_).status().code(), absl::StatusCode::kUnavailable);
  auto loaded = Load(source_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->n_traces(), 20u);
  EXPECT_EQ(env_->fired(), 4);
}

INSTANTIATE_TEST_SUITE_P(DiskAndMemory, CatalogStoreTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Memory" : "Disk"; });

}  // namespace
}  // namespace shotstream::catalog
