#include "server/dataset/dataset_registry.h"

#include "gtest/gtest.h"

namespace shotstream::dataset {
namespace {

TEST(DatasetRegistryTest, StartEntriesThenWrittenOnesOnlyOncePublished) {
  DatasetRegistry r(2);
  r.at(0).name = "a";
  r.at(1).name = "b";
  ASSERT_EQ(r.All().size(), 2u);
  const DatasetEntry* a = r.Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(r.Find("zz"), nullptr);

  EXPECT_EQ(r.Reserve("a").code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(r.Reserve("c").ok());
  EXPECT_EQ(r.Reserve("c").code(), absl::StatusCode::kAlreadyExists);  // a second writer
  DatasetEntry* c = r.Add("c");
  EXPECT_EQ(r.Find("c"), nullptr);  // not visible until published
  EXPECT_EQ(r.All().size(), 2u);
  EXPECT_EQ(r.Reserve("c").code(), absl::StatusCode::kAlreadyExists);
  r.Publish(c);
  EXPECT_EQ(r.Find("c"), c);
  EXPECT_EQ(r.All().size(), 3u);
  EXPECT_EQ(r.Find("a"), a);  // entries do not move

  ASSERT_TRUE(r.Reserve("d").ok());
  r.Release("d");
  EXPECT_TRUE(r.Reserve("d").ok());
}

}  // namespace
}  // namespace shotstream::dataset
