#include "server/app/shotstream_server.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "shotstream/client/client.h"
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
  ASSERT_TRUE((*server)->AwaitLoaded().has_value());  // it listens while they load
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

// SIGHUP's reload, in-process: a new token works at once, a removed one stops working, and
// a broken token file keeps the old tokens and says why.
TEST(ShotStreamServerTest, ReloadTokensInProcess) {
  config::ServerConfig c = OneDataset(TempPath("reload.sgy"));
  const std::string tokens = TempPath("reload_tokens");
  std::ofstream(tokens) << "alice a11ce\n";
  c.auth_token_file = tokens;
  c.auth_allow["alice"] = {"d"};
  auto server = ShotStreamServer::Start(c);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->AwaitLoaded().has_value());  // it listens while they load
  auto with = [&](const std::string& token) {
    client::ClientOptions o;
    o.token = token;
    auto cl = client::Client::Connect({(*server)->address()}, o);
    return cl.ok() ? (*cl)->GetDataset("d").status() : cl.status();
  };
  EXPECT_TRUE(with("a11ce").ok());
  EXPECT_EQ(with("b0b").code(), absl::StatusCode::kUnauthenticated);

  std::ofstream(tokens) << "alice a11ce\nb0b\n";  // bob's token, unnamed
  ASSERT_TRUE((*server)->ReloadTokens().ok());
  EXPECT_EQ((*server)->token_count(), 2u);
  EXPECT_TRUE(with("b0b").ok());

  std::ofstream(tokens) << "b0b\n";  // alice gone: auth.allow now names no token
  const absl::Status broken = (*server)->ReloadTokens();
  EXPECT_FALSE(broken.ok());
  EXPECT_NE(broken.message().find("alice"), std::string::npos) << broken;
  EXPECT_TRUE(with("a11ce").ok()) << "the old tokens stay";
  EXPECT_EQ((*server)->token_count(), 2u);
  (*server)->Drain();
}

}  // namespace
}  // namespace shotstream::server
