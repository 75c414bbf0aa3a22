// The retry cases both clients share (client/testdata/retry_cases.txt).
#include "client/retry_budget.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace shotstream::client {
namespace {

TEST(RetryBudgetTest, FollowsTheSharedCases) {
  std::ifstream in("client/testdata/retry_cases.txt");
  ASSERT_TRUE(in) << "client/testdata/retry_cases.txt missing";
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    int retries;
    ASSERT_TRUE(words >> retries) << line;
    RetryBudget budget(retries);
    std::string event;
    while (words >> event) {
      if (event == "shot") {
        budget.Delivered();
      } else if (event == "x") {
        EXPECT_EQ(budget.Failed(), std::nullopt) << line;
      } else {
        EXPECT_EQ(budget.Failed(), absl::Milliseconds(std::stoi(event))) << line;
      }
    }
    ++cases;
  }
  EXPECT_GE(cases, 9);
}

}  // namespace
}  // namespace shotstream::client
