#include "server/catalog/catalog_store.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/segy/segy_file.h"
#include "server/segy/segy_scan.h"
#include "server/segy/test_writer.h"

namespace shotstream::catalog {
namespace {

std::string Dir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d ? d : "/tmp";
}

class CatalogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
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
      owned_.push_back(std::move(*segy::OpenSegyFile(path)));
      files_.push_back(owned_.back().get());
    }
    auto c = segy::ScanCatalog(files_, *segy::ParseShotKey("field_record"));
    ASSERT_TRUE(c.ok());
    catalog_ = *c;
    auto s = DescribeSource(files_, "field_record");
    ASSERT_TRUE(s.ok());
    source_ = *s;
    path_ = Dir() + "/line.catalog";
    ASSERT_TRUE(SaveCatalog(path_, source_, catalog_).ok());
  }

  std::string ReadFile() {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void WriteFile(const std::string& data) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << data;
  }

  std::vector<std::unique_ptr<io::TraceFile>> owned_;
  std::vector<const io::TraceFile*> files_;
  Catalog catalog_;
  CatalogSource source_;
  std::string path_;
};

TEST_F(CatalogStoreTest, SaveLoadEqual) {
  auto loaded = LoadCatalog(path_, source_);
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

TEST_F(CatalogStoreTest, SourcePositionsRoundTrip) {
  Catalog with = *Catalog::FromParts(catalog_.shots(), catalog_.segments(),
                                     std::vector<uint32_t>(catalog_.list().begin(),
                                                           catalog_.list().end()),
                                     catalog_.files(), {{0, 1.5, -2.5}, {1, 3.25, 4.0}});
  ASSERT_TRUE(SaveCatalog(path_, source_, with).ok());
  auto loaded = LoadCatalog(path_, source_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->source_positions().size(), 2u);
  EXPECT_EQ(loaded->source_positions()[1].x, 3.25);
  EXPECT_EQ(loaded->source_positions()[0].y, -2.5);
}

TEST_F(CatalogStoreTest, EveryBitFlipIsCaughtAsDataLoss) {
  const std::string good = ReadFile();
  for (size_t i = 0; i < good.size(); i += 7) {
    std::string bad = good;
    bad[i] ^= 0x10;
    WriteFile(bad);
    auto loaded = LoadCatalog(path_, source_);
    ASSERT_FALSE(loaded.ok()) << "flip at byte " << i;
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << i << loaded.status();
  }
}

TEST_F(CatalogStoreTest, TruncationAndOtherVersionAreDataLoss) {
  const std::string good = ReadFile();
  for (size_t n : {size_t{0}, size_t{5}, good.size() / 2, good.size() - 1}) {
    WriteFile(good.substr(0, n));
    EXPECT_EQ(LoadCatalog(path_, source_).status().code(), absl::StatusCode::kDataLoss) << n;
  }
  std::string other = good;
  other[8] = 99;  // another version
  WriteFile(other);
  auto s = LoadCatalog(path_, source_).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("version"), absl::string_view::npos);
}

TEST_F(CatalogStoreTest, StaleSourceIsRefusedWithTheReason) {
  CatalogSource changed = source_;
  changed.files[1].size += 240;
  auto s = LoadCatalog(path_, changed).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("cs1.sgy: size changed"), absl::string_view::npos) << s;

  changed = source_;
  changed.files[0].mtime_ns += 1;
  EXPECT_NE(LoadCatalog(path_, changed).status().message().find("modification time"),
            absl::string_view::npos);
  changed = source_;
  changed.files[0].fingerprint ^= 1;
  EXPECT_NE(LoadCatalog(path_, changed).status().message().find("fingerprint"),
            absl::string_view::npos);
  changed = source_;
  changed.files.pop_back();
  EXPECT_EQ(LoadCatalog(path_, changed).status().code(), absl::StatusCode::kFailedPrecondition);
  changed = source_;
  changed.shot_key = "inline";
  EXPECT_NE(LoadCatalog(path_, changed).status().message().find("shot key"),
            absl::string_view::npos);
  EXPECT_EQ(LoadCatalog(Dir() + "/none.catalog", source_).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CatalogStoreTest, FingerprintReadsAreFewAndFixed) {
  const uint64_t before = files_[0]->read_calls();
  ASSERT_TRUE(DescribeSource(files_, "field_record").ok());
  EXPECT_EQ(files_[0]->read_calls() - before, 3u);  // file header, first and last trace header
}

}  // namespace
}  // namespace shotstream::catalog
