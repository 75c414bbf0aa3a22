#include "server/common/listen_probe.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace shotstream {
namespace {

TEST(ListenProbeTest, NamesAnAddressInUse) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(a);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string taken = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  absl::Status s = ProbeListen(taken);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), taken + ": address in use");
  ::close(fd);
  EXPECT_TRUE(ProbeListen("127.0.0.1:0").ok());
  EXPECT_EQ(ProbeListen("127.0.0.1").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ProbeListen("127.0.0.1:99999").code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shotstream
