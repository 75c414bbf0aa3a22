// The registry of formats: names, detection under format: auto, and the checks a
// configuration gets before any file is opened.
#include "server/formats/formats.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace shotstream::source {
namespace {

std::string WriteBytes(const std::string& name, const std::string& bytes) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

TEST(FormatsTest, EveryFormatOnceWithSegyLast) {
  EXPECT_EQ(FormatNames(), "auto, npy, hdf5, zarr, segy");
  EXPECT_EQ(Formats().back()->name, "segy");
  EXPECT_EQ(*FindFormat("auto"), nullptr);
  EXPECT_EQ((*FindFormat("hdf5"))->name, "hdf5");
  auto unknown = FindFormat("zarrr");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("expected auto, npy, hdf5, zarr, segy"),
            absl::string_view::npos);
}

TEST(FormatsTest, AutoDetectsByContentThenNameAndSegyTakesTheRest) {
  EXPECT_EQ(DetectFormat(WriteBytes("data.bin", std::string("\x93NUMPY\x01\x00", 8))).name, "npy");
  EXPECT_EQ(DetectFormat(WriteBytes("data2.bin", std::string("\x89HDF\r\n\x1a\n", 8))).name,
            "hdf5");
  EXPECT_EQ(DetectFormat(WriteBytes("x.h5", "")).name, "hdf5");
  EXPECT_EQ(DetectFormat(WriteBytes("line.sgy", "C 1")).name, "segy");
  EXPECT_EQ(DetectFormat("/no/such/file.npy").name, "npy");  // by name; opening says why
  // A directory with Zarr metadata in it (v2 or v3).
  const std::string store = WriteBytes("store.zarr", "").append("");
  std::remove(store.c_str());
  ASSERT_EQ(::mkdir(store.c_str(), 0755), 0);
  WriteBytes("store.zarr/zarr.json", R"({"zarr_format": 3, "node_type": "group"})");
  EXPECT_EQ(DetectFormat(store).name, "zarr");
}

TEST(FormatsTest, PatternsSuggestAFormatForCheckingShotKeys) {
  EXPECT_EQ(SuggestedFormat({"/d/*.h5"}).name, "hdf5");
  EXPECT_EQ(SuggestedFormat({"/d/a.h5", "/d/b.hdf5"}).name, "hdf5");
  EXPECT_EQ(SuggestedFormat({"/d/a.h5", "/d/b.npy"}).name, "segy");  // they disagree
  EXPECT_EQ(SuggestedFormat({"/d/x"}).name, "segy");
  EXPECT_EQ(SuggestedFormat({"/d/survey.zarr"}).name, "zarr");
  EXPECT_EQ(SuggestedFormat({"/d/survey.mdio"}).name, "zarr");
  EXPECT_EQ(SuggestedFormat({}).name, "segy");
}

TEST(FormatsTest, ADatasetsFilesAreOfOneFormat) {
  SourceSpec spec;
  spec.dataset = "mixed";
  spec.paths = {WriteBytes("m.npy", std::string("\x93NUMPY\x01\x00", 8)), WriteBytes("m.sgy", "x")};
  auto s = OpenSource(nullptr, spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("dataset 'mixed'"), absl::string_view::npos);
  EXPECT_NE(s.status().message().find("m.sgy is segy but"), absl::string_view::npos)
      << s.status();
  EXPECT_NE(s.status().message().find("of one format"), absl::string_view::npos);
}

}  // namespace
}  // namespace shotstream::source
