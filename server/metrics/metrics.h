// Prometheus text exposition of the service's counters, and a small HTTP endpoint
// (civetweb) that serves it on /metrics.
#ifndef SHOTSTREAM_SERVER_METRICS_METRICS_H_
#define SHOTSTREAM_SERVER_METRICS_METRICS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/dataset/dataset_entry.h"
#include "server/service/service_counters.h"

namespace shotstream::metrics {

// Thread-safe: reads atomics and immutable dataset state.
std::string RenderPrometheus(const service::ServiceCounters& counters,
                             const std::vector<const dataset::DatasetEntry*>& datasets);

// Serves `render()` as text/plain on GET /metrics (and "ok" on /healthz). The render
// function is called on civetweb's threads and must be thread-safe.
class MetricsHttpServer {
 public:
  // `listen` is HOST:PORT; port 0 picks one (see port()).
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, std::function<std::string()> render);
  ~MetricsHttpServer();
  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace shotstream::metrics

#endif  // SHOTSTREAM_SERVER_METRICS_METRICS_H_
