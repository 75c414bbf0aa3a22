#include "server/metrics/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace shotstream::metrics {
namespace {

std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return "";
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  close(fd);
  return out;
}

TEST(MetricsTest, RendersCountersAsPrometheusText) {
  service::ServiceCounters c;
  c.streams_started = 7;  // 4 finished below, 3 running
  c.bytes_sent = 12345;
  c.read_latency_count[0] = 2;  // <= 1 ms
  c.read_latency_count[3] = 1;  // <= 10 ms
  c.finished_by_code[5] = 4;    // NOT_FOUND
  c.ended_by_rpc[static_cast<int>(service::Rpc::kWriteShots)][8] = 2;   // RESOURCE_EXHAUSTED
  c.rejected_by_rpc[static_cast<int>(service::Rpc::kGetDataset)][5] = 1;
  std::vector<dataset::DatasetEntry> datasets(1);
  datasets[0].name = "bad";
  datasets[0].SetFailed(absl::NotFoundError("x"));
  const std::string text = RenderPrometheus(c, {&datasets[0]});
  EXPECT_NE(text.find("shotstream_active_streams 3\n"), std::string::npos);
  EXPECT_NE(text.find("shotstream_calls_ended_total{rpc=\"WriteShots\",code=\"RESOURCE_EXHAUSTED\"}"
                      " 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("shotstream_rejected_total{rpc=\"GetDataset\",code=\"NOT_FOUND\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE shotstream_calls_ended_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("shotstream_sample_bytes_sent_total 12345\n"), std::string::npos);
  EXPECT_NE(text.find("shotstream_shot_read_seconds_bucket{le=\"0.001\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("shotstream_shot_read_seconds_bucket{le=\"0.01\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("shotstream_shot_read_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("shotstream_streams_finished_total{code=\"NOT_FOUND\"} 4\n"),
            std::string::npos);
  EXPECT_NE(text.find("shotstream_dataset_ready{dataset=\"bad\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE shotstream_shot_read_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("\nshotstream_open_files_limit "), std::string::npos);
  EXPECT_NE(text.find("# TYPE shotstream_file_evictions_total counter"), std::string::npos);
  EXPECT_NE(text.find("\nshotstream_crc_cache_limit_bytes 268435456\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE shotstream_crc_cache_refusals_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE shotstream_touched_bytes_total counter"), std::string::npos);
}

TEST(MetricsTest, ServesOverHttp) {
  int calls = 0;
  auto server = MetricsHttpServer::Start("127.0.0.1:0", [&] {
    ++calls;
    return std::string("shotstream_up 1\n");
  });
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  const std::string body = HttpGet((*server)->port(), "/metrics");
  EXPECT_NE(body.find("200 OK"), std::string::npos) << body;
  EXPECT_NE(body.find("shotstream_up 1"), std::string::npos);
  EXPECT_EQ(calls, 1);
  EXPECT_NE(HttpGet((*server)->port(), "/healthz").find("ok"), std::string::npos);
}

}  // namespace
}  // namespace shotstream::metrics
