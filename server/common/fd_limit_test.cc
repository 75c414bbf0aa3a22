#include "server/common/fd_limit.h"

#include <sys/resource.h>

#include "gtest/gtest.h"

namespace shotstream {
namespace {

TEST(FdLimitTest, RaisesTheSoftLimitToTheHardOneAndSaysSo) {
  struct rlimit rl;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max <= 64) GTEST_SKIP() << "hard limit too low";
  const rlim_t hard = rl.rlim_max;
  rl.rlim_cur = 64;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
  const FdLimit l = RaiseFdLimit();
  EXPECT_EQ(l.before, 64u);
  EXPECT_EQ(l.now, l.hard);
  EXPECT_EQ(l.Describe(), "descriptor limit raised from 64 to " + std::to_string(l.hard));
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  EXPECT_EQ(rl.rlim_cur, hard == RLIM_INFINITY ? rlim_t{1} << 20 : hard);
  const FdLimit again = RaiseFdLimit();
  EXPECT_EQ(again.before, again.now);
  EXPECT_NE(again.Describe().find("(the hard limit)"), std::string::npos);
}

}  // namespace
}  // namespace shotstream
