#include "server/catalog/catalog.h"

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::catalog {
namespace {

// The reference: every trace's (shot, position), grouped by shot in the order added.
using Reference = std::map<int64_t, std::vector<io::TraceRef>>;

// Builds both from `rows` (shot id, file, trace index), added in that order.
Catalog Build(const std::vector<std::pair<int64_t, std::pair<uint32_t, uint64_t>>>& rows,
              const std::vector<FileGeometry>& files, Reference* ref) {
  CatalogBuilder b(files);
  for (const auto& [id, where] : rows) {
    b.Add(id, where.first, where.second);
    const FileGeometry& g = files[where.first];
    (*ref)[id].push_back({where.first, g.first_offset + where.second * g.stride});
  }
  return std::move(b).Finish();
}

void ExpectSame(const Catalog& c, const Reference& ref) {
  ASSERT_EQ(c.shots().size(), ref.size());
  uint64_t total = 0;
  size_t i = 0;
  for (const auto& [id, traces] : ref) {
    const ShotEntry* s = c.Find(id);
    ASSERT_NE(s, nullptr) << id;
    EXPECT_EQ(&c.shots()[i++], s);  // sorted by id
    EXPECT_EQ(c.TracesOf(*s), traces) << "shot " << id;
    EXPECT_EQ(s->n_traces, traces.size());
    total += traces.size();
  }
  EXPECT_EQ(c.n_traces(), total);
}

TEST(CatalogTest, FindsShotsByIdAndTheirTracesInOrder) {
  CatalogBuilder b({{3600, 400}, {0, 1}});
  b.Add(7, 0, 0, 2);
  b.Add(-2, 1, 800);
  b.Add(7, 1, 0);
  b.Add(3, 0, 5, 2);
  const Catalog c = std::move(b).Finish();
  EXPECT_EQ(c.n_traces(), 6u);
  ASSERT_NE(c.Find(7), nullptr);
  EXPECT_EQ(c.TracesOf(*c.Find(7)),
            (std::vector<io::TraceRef>{{0, 3600}, {0, 4000}, {1, 0}}));
  EXPECT_EQ(c.TracesOf(*c.Find(-2)), (std::vector<io::TraceRef>{{1, 800}}));
  EXPECT_EQ(c.TracesOf(*c.Find(3)), (std::vector<io::TraceRef>{{0, 5600}, {0, 6000}}));
  EXPECT_EQ(c.shots()[0].shot_id, -2);
  EXPECT_EQ(c.Find(4), nullptr);
  EXPECT_EQ(c.Find(100), nullptr);
  EXPECT_EQ(Catalog().Find(1), nullptr);
}

TEST(CatalogTest, ShotOrderedTracesCostOneSegmentAShot) {
  CatalogBuilder b({{3600, 244}});
  for (int64_t shot = 0; shot < 1000; ++shot) {
    for (uint64_t t = 0; t < 500; ++t) b.Add(shot + 1, 0, shot * 500 + t);  // one at a time
  }
  const Catalog c = std::move(b).Finish();
  EXPECT_EQ(c.n_traces(), 500000u);
  EXPECT_EQ(c.segments().size(), 1000u);
  EXPECT_TRUE(c.list().empty());
  EXPECT_LT(c.ResidentBytes(), 500000u / 10);  // under 0.1 byte a trace
  EXPECT_EQ(c.TracesOf(*c.Find(1000)).back(), (io::TraceRef{0, 3600 + 499999ull * 244}));
}

TEST(CatalogTest, ScatteredTracesCostFourBytesATrace) {
  // Each shot's traces interleaved with every other's, in a random order.
  std::mt19937 rng(7);
  std::vector<int64_t> owner(200000);
  for (size_t i = 0; i < owner.size(); ++i) owner[i] = static_cast<int64_t>(i % 100);
  std::shuffle(owner.begin(), owner.end(), rng);
  std::vector<std::pair<int64_t, std::pair<uint32_t, uint64_t>>> rows;
  for (uint64_t i = 0; i < owner.size(); ++i) rows.push_back({owner[i], {0, i}});
  Reference ref;
  const Catalog c = Build(rows, {{3600, 244}}, &ref);
  ExpectSame(c, ref);
  EXPECT_LE(c.ResidentBytes(), owner.size() * 5);
}

// Random layouts: several files, shot-ordered stretches, scattered traces, shots spread
// over files, traces added out of file order, gaps (dead traces), huge trace indices.
TEST(CatalogTest, RandomLayoutsKeepEveryShotsTracesInOrder) {
  for (int seed = 0; seed < 200; ++seed) {
    std::mt19937_64 rng(seed);
    const uint32_t n_files = 1 + rng() % 4;
    std::vector<FileGeometry> files;
    for (uint32_t f = 0; f < n_files; ++f) files.push_back({rng() % 4000, 1 + rng() % 1000});
    std::vector<std::pair<int64_t, std::pair<uint32_t, uint64_t>>> rows;
    const int n_groups = 1 + static_cast<int>(rng() % 60);
    for (int g = 0; g < n_groups; ++g) {
      const uint32_t file = rng() % n_files;
      uint64_t index = rng() % 3 == 0 ? (uint64_t{1} << 32) - 2 + rng() % 5 : rng() % 10000;
      const int64_t shot = static_cast<int64_t>(rng() % 12) - 3;
      switch (rng() % 4) {
        case 0:  // a run of one shot
          for (uint64_t n = rng() % 40; n > 0; --n) rows.push_back({shot, {file, index++}});
          break;
        case 1:  // traces of a few shots interleaved
          for (uint64_t n = rng() % 40; n > 0; --n) {
            rows.push_back({shot + static_cast<int64_t>(rng() % 3), {file, index++}});
          }
          break;
        case 2:  // stray traces with gaps
          for (uint64_t n = rng() % 10; n > 0; --n) {
            index += rng() % 5;
            rows.push_back({shot, {file, index++}});
          }
          break;
        default:  // backwards
          for (uint64_t n = rng() % 10; n > 0 && index > 0; --n) rows.push_back({shot, {file, index--}});
      }
    }
    Reference ref;
    const Catalog c = Build(rows, files, &ref);
    SCOPED_TRACE(seed);
    ExpectSame(c, ref);
    // The saved columns make the same catalog.
    auto again = Catalog::FromParts(c.shots(), c.segments(),
                                    std::vector<uint32_t>(c.list().begin(), c.list().end()),
                                    c.files(), {});
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->AllTraces(), c.AllTraces());
  }
}

TEST(CatalogTest, MoreShotsThan16BitLogWordsHoldGoOnIn32BitWords) {
  // 40,000 shots of 3 traces, interleaved: the log widens mid-way, with seeks and runs
  // before and after.
  std::vector<std::pair<int64_t, std::pair<uint32_t, uint64_t>>> rows;
  for (uint64_t k = 0; k < 3; ++k) {
    for (int64_t s = 0; s < 40000; ++s) rows.push_back({s * 7 - 1000, {0, k * 40000 + s}});
  }
  rows.push_back({5, {1, 100}});
  rows.push_back({5, {1, 101}});
  Reference ref;
  const Catalog c = Build(rows, {{3600, 244}, {0, 1}}, &ref);
  ExpectSame(c, ref);
}

TEST(CatalogTest, AddingRangesEqualsAddingTracesOneByOne) {
  CatalogBuilder ranges({{0, 1}, {0, 1}});
  CatalogBuilder ones({{0, 1}, {0, 1}});
  ranges.Add(5, 0, 10, 100);
  ranges.Add(6, 1, 0, 3);
  ranges.Add(5, 1, 3, 7);
  for (uint64_t i = 10; i < 110; ++i) ones.Add(5, 0, i);
  for (uint64_t i = 0; i < 3; ++i) ones.Add(6, 1, i);
  for (uint64_t i = 3; i < 10; ++i) ones.Add(5, 1, i);
  const Catalog a = std::move(ranges).Finish(), b = std::move(ones).Finish();
  EXPECT_EQ(a.AllTraces(), b.AllTraces());
  EXPECT_EQ(a.segments().size(), 3u);
  EXPECT_EQ(b.segments().size(), 3u);
}

TEST(CatalogTest, InconsistentPartsAreRefused) {
  const std::vector<Segment> seg = {{0, 0, 2}};
  EXPECT_TRUE(Catalog::FromParts({{1, 0, 2, 1}}, seg, {}, {{0, 1}}, {}).ok());
  EXPECT_FALSE(Catalog::FromParts({{1, 0, 3, 1}}, seg, {}, {{0, 1}}, {}).ok());  // count
  EXPECT_FALSE(Catalog::FromParts({{1, 0, 2, 1}}, seg, {}, {}, {}).ok());        // file id
  EXPECT_FALSE(Catalog::FromParts({{1, 0, 2, 1}}, seg, {}, {{0, 0}}, {}).ok());  // stride
  EXPECT_FALSE(Catalog::FromParts({{1, 0, 2, 2}}, seg, {}, {{0, 1}}, {}).ok());  // segments
  EXPECT_FALSE(Catalog::FromParts({{1, 0, 1, 1}, {1, 1, 0, 0}}, seg, {}, {{0, 1}}, {}).ok());
  const std::vector<Segment> listed = {{1, 0, 2 | Segment::kList}};
  EXPECT_FALSE(Catalog::FromParts({{1, 0, 2, 1}}, listed, std::vector<uint32_t>{4, 5}, {{0, 1}}, {}).ok());
  EXPECT_TRUE(Catalog::FromParts({{1, 0, 2, 1}}, listed, std::vector<uint32_t>{4, 5, 6}, {{0, 1}}, {}).ok());
}

}  // namespace
}  // namespace shotstream::catalog
