#include "server/app/shotstream_server.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "client/client.h"
#include "gtest/gtest.h"
#include "server/segy/test_writer.h"

namespace shotstream::server {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

config::ServerConfig OneDataset(const std::string& path) {
  segy::TestFileSpec spec;
  spec.n_samples = 8;
  for (int t = 0; t < 6; ++t) {
    segy::TestTrace tr;
    tr.fields.push_back({9, 4, 1 + t / 3});
    tr.samples.assign(8, static_cast<float>(t));
    spec.traces.push_back(tr);
  }
  segy::WriteSegyFile(path, spec);
  config::ServerConfig c;
  c.listen = "127.0.0.1:0";
  c.grace_period = absl::Seconds(1);
  c.drain_delay = absl::ZeroDuration();
  c.log_streams = false;
  config::DatasetConfig d;
  d.name = "d";
  d.files = {path};
  c.datasets.push_back(d);
  return c;
}

TEST(ShotStreamServerTest, ServesInProcessAndDrains) {
  auto server = ShotStreamServer::Start(OneDataset(TempPath("inproc.sgy")));
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  EXPECT_EQ((*server)->address(), absl::StrCat("127.0.0.1:", (*server)->port()));
  auto client = client::Client::Connect((*server)->address());
  ASSERT_TRUE(client.ok()) << client.status();
  auto info = (*client)->GetDataset("d");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->shot_ids, (std::vector<int64_t>{1, 2}));
  auto reader = (*client)->Stream("d", {2, 1}, {});
  client::Shot shot;
  ASSERT_TRUE(*reader->Next(&shot));
  EXPECT_EQ(shot.shot_id, 2);
  EXPECT_EQ(shot.samples.data()[0], 3.0f);
  ASSERT_TRUE(*reader->Next(&shot));
  EXPECT_FALSE(*reader->Next(&shot));
  EXPECT_EQ((*server)->shots_sent(), 2);
  std::thread waiter([&] { (*server)->Wait(); });  // returns once Drain has
  (*server)->Drain();
  waiter.join();
  // Stopped: a new call cannot connect.
  client::ClientOptions quick;
  quick.connect_timeout = absl::Milliseconds(300);
  auto after = client::Client::Connect({(*server)->address()}, quick);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)->GetDataset("d").status().code(), absl::StatusCode::kUnavailable);
}

TEST(ShotStreamServerTest, StartErrorsSayWhy) {
  auto first = ShotStreamServer::Start(OneDataset(TempPath("taken.sgy")), {});
  ASSERT_TRUE(first.ok()) << first.status();
  config::ServerConfig again = OneDataset(TempPath("taken2.sgy"));
  again.listen = (*first)->address();
  auto second = ShotStreamServer::Start(again, {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(), (*first)->address() + ": address in use");

  config::ServerConfig typo = OneDataset(TempPath("typo.sgy"));
  const std::string tokens = TempPath("tokens");
  std::ofstream(tokens) << "bob b0b\n";
  typo.auth_token_file = tokens;
  typo.auth_allow["bobb"] = {"d"};
  EXPECT_NE(CheckConfig(typo).message().find("no token is named 'bobb'"), std::string::npos);
  EXPECT_FALSE(ShotStreamServer::Start(typo, {}).ok());
}

}  // namespace
}  // namespace shotstream::server
