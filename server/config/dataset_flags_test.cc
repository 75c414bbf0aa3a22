#include "server/config/dataset_flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::config {
namespace {

absl::Status Take(std::vector<std::string> args, std::vector<std::string>* rest,
                  std::vector<std::string>* values) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  absl::Status s = TakeDatasetFlags(&argc, argv.data(), values);
  rest->assign(argv.begin(), argv.begin() + argc);
  return s;
}

TEST(DatasetFlagsTest, TakesEveryDatasetFlagWithCommasKept) {
  std::vector<std::string> rest, values;
  ASSERT_TRUE(Take({"server", "--io=pread", "--dataset=a=/x/*.sgy,/y/*.sgy", "--listen=:1",
                    "--dataset", "b=/z.sgy", "--shot_key=inline"},
                   &rest, &values)
                  .ok());
  EXPECT_EQ(values, (std::vector<std::string>{"a=/x/*.sgy,/y/*.sgy", "b=/z.sgy"}));
  EXPECT_EQ(rest, (std::vector<std::string>{"server", "--io=pread", "--listen=:1",
                                            "--shot_key=inline"}));
}

TEST(DatasetFlagsTest, APerDatasetFlagBetweenDatasetsIsAmbiguous) {
  std::vector<std::string> rest, values;
  absl::Status s = Take({"server", "--dataset=a=/x", "--check_trace_lengths", "--dataset=b=/y"},
                        &rest, &values);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--check_trace_lengths stands between --dataset flags"),
            std::string::npos);
  values.clear();
  EXPECT_TRUE(Take({"server", "--dataset=a=/x", "--listen=:1", "--dataset=b=/y"}, &rest,
                   &values)
                  .ok());  // not a per-dataset flag
}

}  // namespace
}  // namespace shotstream::config

namespace shotstream::config {
namespace {

TEST(DatasetNameTest, FlagSplittingAndNames) {
  auto ok = SplitDatasetFlag("line1=/data/*.sgy");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, "line1");
  EXPECT_EQ(ok->second, "/data/*.sgy");
  EXPECT_FALSE(SplitDatasetFlag("nofiles").ok());
  EXPECT_FALSE(SplitDatasetFlag("../x=/a").ok());
  EXPECT_FALSE(ValidateDatasetName("a/b").ok());
  EXPECT_FALSE(ValidateDatasetName("").ok());
  EXPECT_FALSE(ValidateDatasetName(std::string(129, 'a')).ok());
  EXPECT_TRUE(ValidateDatasetName("Line_1.v2-b").ok());
}

}  // namespace
}  // namespace shotstream::config
