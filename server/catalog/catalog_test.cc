#include "server/catalog/catalog.h"

#include "gtest/gtest.h"

namespace shotstream::catalog {
namespace {

TEST(CatalogTest, FindsShotsByIdAndTheirTracesInOrder) {
  std::vector<ShotEntry> shots = {{-2, 0, 1}, {3, 1, 2}, {7, 3, 3}};
  std::vector<io::TraceRef> traces = {{1, 800}, {0, 240}, {0, 720},
                                      {0, 0},   {0, 480}, {1, 0}};
  const Catalog c = Catalog::FromColumns(shots, traces);
  EXPECT_EQ(c.n_traces(), 6u);
  ASSERT_NE(c.Find(7), nullptr);
  const absl::Span<const io::TraceRef> seven = c.TracesOf(*c.Find(7));
  ASSERT_EQ(seven.size(), 3u);
  EXPECT_EQ(seven[0], (io::TraceRef{0, 0}));
  EXPECT_EQ(seven[2], (io::TraceRef{1, 0}));
  EXPECT_EQ(c.TracesOf(*c.Find(-2))[0], (io::TraceRef{1, 800}));
  EXPECT_EQ(c.Find(4), nullptr);
  EXPECT_EQ(c.Find(100), nullptr);
  EXPECT_EQ(Catalog().Find(1), nullptr);
}

}  // namespace
}  // namespace shotstream::catalog
