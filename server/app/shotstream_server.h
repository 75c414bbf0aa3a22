// The shotstream server as a library: a ServerConfig in, datasets loaded, the gRPC
// service listening with health, metrics and the heap trimmer; SIGHUP's token reload and
// SIGTERM's drain as calls. server/main.cc is flags and signals around it; tests can run
// it in-process.
//
// Thread-safe: every method may be called from any thread (Drain once).
#ifndef SHOTSTREAM_SERVER_APP_SHOTSTREAM_SERVER_H_
#define SHOTSTREAM_SERVER_APP_SHOTSTREAM_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/config/server_config.h"
#include "server/dataset/dataset_entry.h"
#include "server/dataset/dataset_healer.h"
#include "server/dataset/dataset_registry.h"

namespace grpc {
class HealthCheckServiceInterface;
class Server;
class Service;
}  // namespace grpc

namespace shotstream {
class HeapTrimmer;
namespace metrics {
class MetricsHttpServer;
}
namespace jobs {
class JobRegistry;
}
namespace service {
class Gate;
class TokenStore;
struct ServiceCounters;
}
namespace stream {
class ByteBudget;
class EncodingAdvisor;
class ReaderPool;
class StallWatch;
}

namespace server {

// What a run takes besides its configuration: test hooks only.
struct RunOptions {
  std::optional<int64_t> corrupt_shot_for_testing;
};

// Every dataset's format is one the server reads, and its shot key one that format can
// group traces by (under format auto: the format its file patterns suggest, SEG-Y where
// they suggest none); INVALID_ARGUMENT naming datasets[i] (NAME).format or .shot_key.
absl::Status CheckFormats(const config::ServerConfig& config);

// --check_config beyond the settings: CheckFormats, the token file (with every name
// auth.allow gives), and every pattern of every dataset matches files that open as their
// dataset says.
absl::Status CheckConfig(const config::ServerConfig& config);

class ShotStreamServer {
 public:
  // Starts listening with every dataset LOADING, then loads them one after another on a
  // thread of its own (start-up lines on stderr; a failed one is served as FAILED; health
  // NOT_SERVING until one is READY). Errors: the token file, TLS files, catalog_dir, the
  // listener ("HOST:PORT: address in use").
  static absl::StatusOr<std::unique_ptr<ShotStreamServer>> Start(
      const config::ServerConfig& config, const RunOptions& options = {});

  // --index_only: loads every dataset (building or checking catalogs), prints a summary
  // line each on stdout; true when all loaded.
  static bool IndexOnly(const config::ServerConfig& config);

  ~ShotStreamServer();  // drains first if Drain was not called
  ShotStreamServer(const ShotStreamServer&) = delete;
  ShotStreamServer& operator=(const ShotStreamServer&) = delete;

  int port() const { return port_; }
  // HOST:PORT as printed in the "shotstream listening on" line.
  std::string address() const;

  // SIGHUP: re-reads the token file; on error the old tokens stay and the error is
  // returned. OK without authentication.
  absl::Status ReloadTokens();
  // SIGHUP: the configuration `next` (made again from the command line and --config).
  // Every FAILED dataset (or one served without its bad files) is retried; datasets
  // added are loaded, removed ones hidden, changed ones loaded again (each on a thread of
  // its own; other datasets' streams run on, and a changed one serves until its new
  // dataset is loaded); on_bad_file holds for what is loaded from now on. Other settings
  // take effect at a restart. Returns a line for each thing done, and one naming the
  // settings that wait for a restart.
  std::vector<std::string> Reload(const config::ServerConfig& next)
      ABSL_LOCKS_EXCLUDED(reload_mu_);
  size_t token_count() const;

  // SIGTERM: health NOT_SERVING and new streams refused for drain_delay, then running
  // streams get the grace period, then they are finished with UNAVAILABLE "the server is
  // shutting down", and the server stops. Returns once stopped.
  void Drain();
  // Blocks until the server has stopped (a Drain, on any thread, has returned).
  void Wait() { stopped_.WaitForNotification(); }
  // Blocks until the first load of every dataset has ended: "N READY, M FAILED", or
  // nullopt when a Drain stopped the loading first.
  std::optional<std::string> AwaitLoaded() ABSL_LOCKS_EXCLUDED(load_mu_);

  int64_t shots_sent() const;

 private:
  ShotStreamServer() = default;
  void SetHealthLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(health_mu_);
  // The loader thread: each dataset's first load in turn, until all are or a Drain.
  void LoadAll(const std::vector<std::pair<dataset::DatasetEntry*, config::DatasetConfig>>& all)
      ABSL_LOCKS_EXCLUDED(load_mu_, health_mu_);

  config::ServerConfig config_;
  RunOptions options_;
  int port_ = 0;
  bool drained_ = false;
  absl::Notification stopped_;  // Drain has finished
  std::atomic<bool> draining_{false};
  // The health service while the server lives; dataset rebuilds set health under the
  // lock from their own threads.
  absl::Mutex health_mu_;
  grpc::HealthCheckServiceInterface* health_ ABSL_GUARDED_BY(health_mu_) = nullptr;
  std::set<std::string> removed_ ABSL_GUARDED_BY(health_mu_);  // datasets a reload removed
  // In this order: what serves is destroyed before what it serves from (the reader pool
  // runs its last reads before the budget and counters they hold go; the job executor
  // writes the jobs' last lines after the registry).
  std::unique_ptr<dataset::DatasetRegistry> datasets_;
  std::unique_ptr<dataset::DatasetHealer> healer_;  // before the datasets it heals go
  std::function<void(const dataset::DatasetEntry&)> on_change_;  // every entry's
  std::thread loader_;            // LoadAll; joined by Drain
  absl::Notification loaded_;     // LoadAll has ended
  absl::Mutex load_mu_;
  std::string load_summary_ ABSL_GUARDED_BY(load_mu_);  // empty: stopped by a Drain
  // The configuration as last loaded or reloaded (config_ stays the start-up one, which
  // every setting a reload does not apply is read from).
  absl::Mutex reload_mu_;
  config::ServerConfig reloaded_ ABSL_GUARDED_BY(reload_mu_);
  std::unique_ptr<service::TokenStore> tokens_;
  std::unique_ptr<service::ServiceCounters> counters_;
  std::unique_ptr<stream::ByteBudget> budget_;         // null: no in-flight budget
  std::unique_ptr<stream::StallWatch> stall_watch_;    // stalled streams give back
  std::unique_ptr<stream::EncodingAdvisor> advisor_;   // ENCODING_AUTO's measurements
  std::unique_ptr<stream::ReaderPool> disk_;           // write sessions
  std::unique_ptr<stream::ReaderPool> job_disk_;       // job starts, commits, job files
  std::unique_ptr<jobs::JobRegistry> jobs_;
  std::unique_ptr<stream::ReaderPool> pool_;           // shot reads
  std::unique_ptr<service::Gate> gate_;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<metrics::MetricsHttpServer> metrics_;
  std::unique_ptr<HeapTrimmer> trimmer_;
};

}  // namespace server
}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_APP_SHOTSTREAM_SERVER_H_
