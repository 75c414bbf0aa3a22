// The command line over a YAML file: every flag given wins, a flag not given leaves the
// file's value. absl's flags are global, so this binary parses one command line.
#include "server/config/server_flags.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::config {
namespace {

TEST(ServerFlagsTest, FlagsOverrideTheYamlAndUnsetFlagsLeaveIt) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string yaml = std::string(tmp ? tmp : "/tmp") + "/flags.yaml";
  std::ofstream(yaml) << R"(
listen: 127.0.0.1:7000
drain_delay: 5s
stall_timeout: 1m
zero_copy: false
log_streams: false
keepalive: {time: 30s}
limits: {max_queue_depth: 8, default_chunk_bytes: 262144}
auth: {token_file: /etc/tokens, allow: {carol: [a]}}
datasets: [{name: a, files: /x/*.sgy}, {name: b, files: /y/*.sgy}]
)";
  std::vector<std::string> args = {
      "shotstream_server",      "--config=" + yaml,        "--zero_copy=true",
      "--drain_delay=0s",       "--keepalive_timeout=7s",  "--max_chunk_bytes=16777216",
      "--auth_default=deny",    "--auth_allow=alice:a+b,bob:b", "--testing_corrupt_shot=3",
      "--stall_timeout=0s",     "--crc_cache_bytes=0"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  auto cl = ParseServerCommandLine(static_cast<int>(argv.size()), argv.data());
  ASSERT_TRUE(cl.ok()) << cl.status();
  const ServerConfig& c = cl->config;
  EXPECT_EQ(c.listen, "127.0.0.1:7000");       // the file's
  EXPECT_TRUE(c.zero_copy);                    // the flag's
  EXPECT_FALSE(c.log_streams);                 // the file's: the flag was not given
  EXPECT_EQ(c.drain_delay, absl::ZeroDuration());
  EXPECT_EQ(c.stall_timeout, absl::ZeroDuration()) << "0s: off, given by the flag";
  EXPECT_EQ(c.keepalive_time, absl::Seconds(30));
  EXPECT_EQ(c.keepalive_timeout, absl::Seconds(7));
  EXPECT_EQ(c.max_queue_depth, 8u);
  EXPECT_EQ(c.max_chunk_bytes, 16u << 20);
  EXPECT_EQ(c.crc_cache_bytes, 0u);  // the flag's: no CRC-32 kept
  EXPECT_EQ(ResolvedDefaultChunkBytes(c), 262144u);
  EXPECT_TRUE(c.auth_default_deny);
  EXPECT_EQ(c.auth_allow.size(), 2u);  // the flag replaces the file's allow-list
  EXPECT_EQ(c.auth_allow.at("alice"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.auth_allow.at("bob"), (std::vector<std::string>{"b"}));
  EXPECT_EQ(c.datasets.size(), 2u);
  EXPECT_EQ(cl->corrupt_shot_for_testing, 3);
  EXPECT_FALSE(cl->check_config);
}

}  // namespace
}  // namespace shotstream::config
