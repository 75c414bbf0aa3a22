#include "server/config/server_config.h"

#include "gtest/gtest.h"

namespace shotstream::config {
namespace {

TEST(ServerConfigTest, ParsesEverySection) {
  auto c = ParseServerConfig(R"(
listen: 127.0.0.1:6000
catalog_dir: /var/cache/shotstream
metrics_listen: 127.0.0.1:9100
readers: 3
grace_period: 10s
keepalive: {time: 30s, timeout: 5s}
limits:
  max_queue_depth: 8
  max_chunk_bytes: 2097152
  max_streams: 10
  max_streams_per_peer: 2
  max_writes: 3
  crc_cache_bytes: 1048576
tls: {cert: /etc/s.crt, key: /etc/s.key, client_ca: /etc/ca.crt}
auth: {token_file: /etc/tokens, allow: {alice: [line1]}}
datasets:
  - name: line1
    files: /data/line1/*.sgy
    shot_key: energy_source_point
  - name: line2
    files: [/data/a/*.sgy, /data/b/*.segy]
    io: mmap
    byte_order: little
)", "test.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->listen, "127.0.0.1:6000");
  EXPECT_EQ(c->readers, 3);
  EXPECT_EQ(c->grace_period, absl::Seconds(10));
  EXPECT_EQ(c->keepalive_timeout, absl::Seconds(5));
  EXPECT_EQ(c->max_queue_depth, 8u);
  EXPECT_EQ(c->max_streams_per_peer, 2u);
  EXPECT_EQ(c->max_writes, 3u);
  EXPECT_EQ(c->crc_cache_bytes, 1u << 20);
  EXPECT_EQ(c->tls_client_ca, "/etc/ca.crt");
  EXPECT_EQ(c->auth_token_file, "/etc/tokens");
  EXPECT_EQ(c->auth_allow.at("alice"), std::vector<std::string>{"line1"});
  ASSERT_EQ(c->datasets.size(), 2u);
  EXPECT_EQ(c->datasets[0].files, std::vector<std::string>{"/data/line1/*.sgy"});
  EXPECT_EQ(c->datasets[0].shot_key, "energy_source_point");
  EXPECT_EQ(c->datasets[1].files.size(), 2u);
  EXPECT_EQ(c->datasets[1].io, "mmap");
  EXPECT_TRUE(ValidateServerConfig(*c).ok());
}

TEST(ServerConfigTest, RunSettingsAndChunkSizesAreInTheYamlToo) {
  auto c = ParseServerConfig(R"(
drain_delay: 250ms
stall_timeout: 2m
zero_copy: false
log_streams: false
limits: {default_chunk_bytes: 524288, max_chunk_bytes: 8388608}
datasets: [{name: d, files: /x/*.sgy}]
)", "run.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->drain_delay, absl::Milliseconds(250));
  EXPECT_EQ(c->stall_timeout, absl::Minutes(2));
  EXPECT_FALSE(c->zero_copy);
  EXPECT_FALSE(c->log_streams);
  EXPECT_EQ(ResolvedDefaultChunkBytes(*c), 524288u);
  EXPECT_EQ(c->max_chunk_bytes, 8388608u);
  EXPECT_TRUE(ValidateServerConfig(*c).ok());

  ServerConfig d;  // the defaults
  EXPECT_EQ(ResolvedDefaultChunkBytes(d), defaults::kDefaultChunkBytes);
  EXPECT_EQ(d.max_chunk_bytes, defaults::kMaxChunkBytes);
  EXPECT_EQ(d.drain_delay, absl::Seconds(1));
  EXPECT_TRUE(d.zero_copy);
  // max_chunk_bytes alone (its meaning before the split) caps the default as well.
  d.max_chunk_bytes = 65536;
  EXPECT_EQ(ResolvedDefaultChunkBytes(d), 65536u);
  d.max_chunk_bytes = 4 << 20;
  EXPECT_EQ(ResolvedDefaultChunkBytes(d), defaults::kDefaultChunkBytes);
  // A default above the maximum is refused, naming both.
  d.datasets.push_back({"d", {"/x/*.sgy"}});
  d.default_chunk_bytes = 8 << 20;
  const absl::Status s = ValidateServerConfig(d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("limits.default_chunk_bytes: 8388608"), std::string::npos) << s;
  EXPECT_NE(s.message().find("(4194304)"), std::string::npos) << s;
}

TEST(ServerConfigTest, ErrorsNameTheKey) {
  struct Case {
    const char* yaml;
    const char* says;
  };
  for (const Case& k : {
           Case{"listn: x", "listn: unknown key"},
           Case{"limits: {max_queue_depht: 3}", "limits.max_queue_depht: unknown key"},
           Case{"limits: {max_queue_depth: lots}", "limits.max_queue_depth: bad value"},
           Case{"grace_period: soon", "grace_period: bad duration"},
           Case{"datasets: [{files: a.sgy}]", "datasets[0].name: missing"},
           Case{"datasets: [{name: a}]", "datasets[0].files: missing"},
           Case{"datasets: [{name: a, files: x, colour: red}]", "datasets[0].colour"},
           Case{"datasets: {name: a}", "datasets: expected a list"},
           Case{"listen: [unclosed", "YAML syntax"},
       }) {
    auto c = ParseServerConfig(k.yaml, "cfg.yaml");
    ASSERT_FALSE(c.ok()) << k.yaml;
    EXPECT_NE(c.status().message().find(k.says), absl::string_view::npos)
        << k.yaml << " -> " << c.status();
    EXPECT_NE(c.status().message().find("cfg.yaml"), absl::string_view::npos);
  }
}

TEST(ServerConfigTest, OnBadFileIsTheServersUnlessADatasetSaysAndHealIntervalIsADuration) {
  auto c = ParseServerConfig(R"(
on_bad_file: skip
heal_interval: 2s
datasets:
  - {name: a, files: /a/*.sgy}
  - {name: b, files: /b/*.sgy, on_bad_file: fail}
)", "cfg.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->heal_interval, absl::Seconds(2));
  EXPECT_EQ(OnBadFile(*c, c->datasets[0]), "skip");
  EXPECT_EQ(OnBadFile(*c, c->datasets[1]), "fail");
  EXPECT_TRUE(ValidateServerConfig(*c).ok());
  c->datasets[1].on_bad_file = "ignore";
  EXPECT_NE(ValidateServerConfig(*c).message().find(
                "datasets[1] (b).on_bad_file: 'ignore' (expected fail or skip)"),
            absl::string_view::npos)
      << ValidateServerConfig(*c);
  c->datasets[1].on_bad_file = "";
  c->on_bad_file = "warn";
  EXPECT_NE(ValidateServerConfig(*c).message().find("on_bad_file: 'warn'"), absl::string_view::npos);
  EXPECT_EQ(ServerConfig().on_bad_file, "fail");
  EXPECT_EQ(ServerConfig().heal_interval, absl::Seconds(10));
}

TEST(ServerConfigTest, SettingsThatDifferNameTheKeysAReloadDoesNotApply) {
  ServerConfig a;
  a.datasets.push_back({"a", {"x"}, "field_record"});
  ServerConfig b = a;
  EXPECT_TRUE(SettingsThatDiffer(a, b).empty());
  b.datasets[0].files = {"y"};  // applied by the reload
  b.on_bad_file = "skip";
  EXPECT_TRUE(SettingsThatDiffer(a, b).empty());
  EXPECT_FALSE(a.datasets[0] == b.datasets[0]);
  b.listen = "127.0.0.1:1";
  b.max_streams = 7;
  EXPECT_EQ(SettingsThatDiffer(a, b),
            (std::vector<std::string>{"listen", "limits.max_streams"}));
}

TEST(ServerConfigTest, ValidationNamesTheProblem) {
  ServerConfig c;
  EXPECT_NE(ValidateServerConfig(c).message().find("no dataset"), absl::string_view::npos);
  c.datasets.push_back({"a", {"x"}, "field_record"});
  EXPECT_EQ(c.datasets[0].io, "auto");  // mmap on local filesystems, pread elsewhere
  EXPECT_TRUE(ValidateServerConfig(c).ok());
  c.datasets[0].io = "fast";
  EXPECT_NE(ValidateServerConfig(c).message().find(
                "datasets[0] (a).io 'fast': expected auto, pread or mmap"),
            absl::string_view::npos)
      << ValidateServerConfig(c).message();
  c.datasets[0].io = "pread";
  c.datasets.push_back({"a", {"y"}, "field_record"});
  EXPECT_NE(ValidateServerConfig(c).message().find("given twice"), absl::string_view::npos);
  c.datasets[1].name = "b";
  c.datasets[1].shot_key = "";
  EXPECT_NE(ValidateServerConfig(c).message().find("datasets[1] (b).shot_key: empty"),
            absl::string_view::npos);
  c.datasets[1].shot_key = "inline";
  c.datasets[1].name = "../etc";
  EXPECT_FALSE(ValidateServerConfig(c).ok());
  c.datasets[1].name = "b";
  c.auth_token_file = "t";
  c.auth_allow["bob"] = {"nope"};
  EXPECT_NE(ValidateServerConfig(c).message().find("auth.allow.bob: unknown dataset 'nope'"),
            absl::string_view::npos);
  c.auth_allow.clear();
  c.tls_cert = "x.crt";
  EXPECT_NE(ValidateServerConfig(c).message().find("cert and key"), absl::string_view::npos);
}

}  // namespace
}  // namespace shotstream::config
