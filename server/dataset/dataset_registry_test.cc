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

TEST(DatasetRegistryTest, ARemovedEntryIsHiddenItsNameFreeAndItsPointerValid) {
  DatasetRegistry r(2);
  r.at(0).name = "a";
  r.at(1).name = "b";
  const DatasetEntry* a = r.Find("a");
  EXPECT_TRUE(r.Remove("a"));
  EXPECT_FALSE(r.Remove("a"));
  EXPECT_EQ(r.Find("a"), nullptr);
  ASSERT_EQ(r.All().size(), 1u);
  EXPECT_EQ(r.All()[0]->name, "b");
  EXPECT_EQ(a->name, "a");  // still there for whoever holds it
  ASSERT_TRUE(r.Reserve("a").ok());  // configured again: a new entry
  DatasetEntry* again = r.Add("a");
  r.Publish(again);
  EXPECT_EQ(r.Find("a"), again);
  EXPECT_NE(again, a);
}

}  // namespace
}  // namespace shotstream::dataset
