// The catalog of [traces, samples] arrays by a header column, and the shot keys they take.
#include "server/source/keyed_catalog.h"

#include "gtest/gtest.h"

namespace shotstream::source {
namespace {

TEST(KeyedCatalog, ShotsSortedByIdTracesInTheOrderGiven) {
  // Traces of shots 9 and 7 interleaved across two files.
  const catalog::Catalog c = CatalogByKey({{9, {0, 0}}, {7, {0, 1}}, {9, {1, 0}}, {7, {1, 5}},
                                           {9, {1, 2}}});
  ASSERT_EQ(c.shots().size(), 2u);
  EXPECT_EQ(c.shots()[0].shot_id, 7);
  EXPECT_EQ(c.shots()[1].shot_id, 9);
  const auto seven = c.TracesOf(*c.Find(7));
  ASSERT_EQ(seven.size(), 2u);
  EXPECT_EQ(seven[0], (io::TraceRef{0, 1}));
  EXPECT_EQ(seven[1], (io::TraceRef{1, 5}));
  const auto nine = c.TracesOf(*c.Find(9));
  ASSERT_EQ(nine.size(), 3u);
  EXPECT_EQ(nine[2], (io::TraceRef{1, 2}));
}

TEST(KeyedCatalog, ShotIdsAreIntegersAndKeysAreColumnNames) {
  EXPECT_EQ(*ShotIdOf(-12.0, "x"), -12);
  auto half = ShotIdOf(2.5, "f.h5: headers/ffid[3]");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("f.h5: headers/ffid[3] is 2.5"), std::string::npos);
  EXPECT_FALSE(ShotIdOf(1e16, "x").ok());
  EXPECT_TRUE(CheckColumnKey("shot_no", "Zarr").ok());
  for (const char* bad : {"", "source_xy", "byte:9"}) {
    auto s = CheckColumnKey(bad, "HDF5");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("HDF5 shots are keyed by a header column"), std::string::npos);
  }
}

}  // namespace
}  // namespace shotstream::source
