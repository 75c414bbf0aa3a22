#include "server/metrics/metrics.h"

#include <civetweb.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/common/listen_probe.h"
#include "server/io/coalescing_reader.h"
#include "server/io/open_file_cache.h"
#include "server/io/trace_crcs.h"

namespace shotstream::metrics {
namespace {

const char* kCodeNames[17] = {"OK",
                              "CANCELLED",
                              "UNKNOWN",
                              "INVALID_ARGUMENT",
                              "DEADLINE_EXCEEDED",
                              "NOT_FOUND",
                              "ALREADY_EXISTS",
                              "PERMISSION_DENIED",
                              "RESOURCE_EXHAUSTED",
                              "FAILED_PRECONDITION",
                              "ABORTED",
                              "OUT_OF_RANGE",
                              "UNIMPLEMENTED",
                              "INTERNAL",
                              "UNAVAILABLE",
                              "DATA_LOSS",
                              "UNAUTHENTICATED"};

void Metric(std::string* out, const char* name, const char* type, const char* help,
            double value) {
  absl::StrAppendFormat(out, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type,
                        name, value);
}

// A counter by RPC and status code: a line for each pair seen (non-zero).
void ByRpcAndCode(std::string* out, const char* name, const char* help,
                  const std::atomic<int64_t> (&counts)[service::kRpcs][17]) {
  absl::StrAppendFormat(out, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
  for (int rpc = 0; rpc < service::kRpcs; ++rpc) {
    for (int code = 0; code < 17; ++code) {
      const int64_t n = counts[rpc][code].load();
      if (n == 0) continue;
      absl::StrAppendFormat(out, "%s{rpc=\"%s\",code=\"%s\"} %d\n", name,
                            service::RpcName(static_cast<service::Rpc>(rpc)), kCodeNames[code], n);
    }
  }
}

}  // namespace

std::string RenderPrometheus(const service::ServiceCounters& c,
                             const std::vector<const dataset::DatasetEntry*>& datasets) {
  std::string out;
  // Finished first, then started: running = started - finished is never negative, and
  // started = finished + running holds in every scrape.
  int64_t finished[17];
  int64_t finished_sum = 0;
  for (int code = 0; code < 17; ++code) finished_sum += finished[code] = c.finished_by_code[code];
  const int64_t started = c.streams_started.load();
  Metric(&out, "shotstream_active_streams", "gauge",
         "StreamShots calls running now (started and not finished).", started - finished_sum);
  Metric(&out, "shotstream_streams_started_total", "counter",
         "StreamShots calls accepted (refused ones are in streams_rejected).", started);
  Metric(&out, "shotstream_streams_cancelled_total", "counter",
         "Streams cancelled by clients or broken.", c.streams_cancelled.load());
  Metric(&out, "shotstream_streams_rejected_total", "counter",
         "Calls of any RPC refused before any data: bad request, unknown dataset or shot, "
         "dataset not ready, limits, authentication, permission, draining (never counted "
         "as active streams).",
         c.streams_rejected.load());
  Metric(&out, "shotstream_queued_shots", "gauge",
         "Shots read or being read ahead and not yet sent, all streams.", c.shots_held.load());
  Metric(&out, "shotstream_max_queued_shots_one_stream", "gauge",
         "Most shots one stream has held at once since start.",
         c.max_shots_held_by_one_stream.load());
  Metric(&out, "shotstream_inflight_bytes", "gauge",
         "Decoded shot bytes held by all streams (the in-flight budget in use).",
         c.inflight_bytes.load());
  Metric(&out, "shotstream_inflight_bytes_peak", "gauge",
         "Most decoded shot bytes held at once since start.", c.inflight_bytes_peak.load());
  Metric(&out, "shotstream_budget_waits_total", "counter",
         "Shot reads that waited for the in-flight byte budget.", c.budget_waits.load());
  Metric(&out, "shotstream_stalled_streams", "gauge",
         "Streams whose consumer has taken nothing for the stall timeout: they gave back "
         "the shots they read ahead, and hold at most the one being sent.",
         c.stalled_streams.load());
  Metric(&out, "shotstream_shots_given_back_total", "counter",
         "Shots read ahead that stalled streams gave back (read again when they resume).",
         c.shots_given_back.load());
  Metric(&out, "shotstream_bytes_given_back_total", "counter",
         "Decoded bytes of the in-flight budget that stalled streams gave back.",
         c.bytes_given_back.load());
  Metric(&out, "shotstream_reads_in_flight", "gauge", "Shot reads running in the reader pool.",
         c.reads_in_flight.load());
  Metric(&out, "shotstream_jobs", "gauge", "Jobs (StreamJob epochs) held.", c.jobs.jobs.load());
  Metric(&out, "shotstream_job_shots_handed_total", "counter",
         "Shots of jobs handed to a consumer.", c.jobs.shots_handed.load());
  Metric(&out, "shotstream_job_shots_returned_total", "counter",
         "Shots of jobs given back by a consumer that left before it was done with them, "
         "or that stalled before it sent them.",
         c.jobs.shots_returned.load());
  Metric(&out, "shotstream_job_shots_done_total", "counter", "Shots of jobs done.",
         c.jobs.shots_done.load());
  Metric(&out, "shotstream_job_commits_total", "counter",
         "Commits of jobs recorded (CommitJob: a trainer's checkpoint).", c.jobs.commits.load());
  Metric(&out, "shotstream_job_rollbacks_total", "counter",
         "Jobs rolled back by a resume from a commit's token.", c.jobs.rollbacks.load());
  Metric(&out, "shotstream_shots_sent_total", "counter", "Shots sent.", c.shots_sent.load());
  Metric(&out, "shotstream_shots_sent_zero_copy_total", "counter",
         "Shots sent from the file mapping as stored, without decoding or copying.",
         c.shots_sent_zero_copy.load());
  Metric(&out, "shotstream_sample_bytes_sent_total", "counter", "Sample bytes sent.",
         c.bytes_sent.load());
  Metric(&out, "shotstream_reads_issued_total", "counter",
         "Positioned reads issued by the coalescing reader.", c.reads_issued.load());
  Metric(&out, "shotstream_bytes_read_total", "counter",
         "Bytes read from SEG-Y files, gaps included.", c.bytes_read.load());
  Metric(&out, "shotstream_bytes_wanted_total", "counter",
         "Bytes of the traces asked for (bytes_read / bytes_wanted is the coalescing overhead).",
         c.bytes_wanted.load());
  out += "# HELP shotstream_shot_read_seconds Time to read and decode one shot.\n"
         "# TYPE shotstream_shot_read_seconds histogram\n";
  int64_t cumulative = 0;
  const size_t n = std::size(service::ServiceCounters::kLatencyBuckets);
  for (size_t b = 0; b <= n; ++b) {
    cumulative += c.read_latency_count[b].load();
    const std::string le =
        b < n ? absl::StrFormat("%g", service::ServiceCounters::kLatencyBuckets[b]) : "+Inf";
    absl::StrAppendFormat(&out, "shotstream_shot_read_seconds_bucket{le=\"%s\"} %d\n", le,
                          cumulative);
  }
  absl::StrAppendFormat(&out, "shotstream_shot_read_seconds_sum %.6f\n",
                        c.read_latency_sum_us.load() / 1e6);
  absl::StrAppendFormat(&out, "shotstream_shot_read_seconds_count %d\n", cumulative);
  out += "# HELP shotstream_streams_finished_total Accepted StreamShots calls finished, by "
         "status.\n"
         "# TYPE shotstream_streams_finished_total counter\n";
  for (int code = 0; code < 17; ++code) {
    absl::StrAppendFormat(&out, "shotstream_streams_finished_total{code=\"%s\"} %d\n",
                          kCodeNames[code], finished[code]);
  }
  out += "# HELP shotstream_streams_rejected_by_code_total Calls refused before any data, "
         "by status.\n"
         "# TYPE shotstream_streams_rejected_by_code_total counter\n";
  for (int code = 0; code < 17; ++code) {
    absl::StrAppendFormat(&out, "shotstream_streams_rejected_by_code_total{code=\"%s\"} %d\n",
                          kCodeNames[code], c.rejected_by_code[code].load());
  }
  ByRpcAndCode(&out, "shotstream_rejected_total",
               "Calls refused before any data, by RPC and status (the codes seen).",
               c.rejected_by_rpc);
  ByRpcAndCode(&out, "shotstream_calls_ended_total",
               "Admitted calls ended, by RPC and status code.", c.ended_by_rpc);
  Metric(&out, "shotstream_shots_written_total", "counter",
         "Shots received and written by WriteShots (of writes committed or not).",
         c.shots_written.load());
  Metric(&out, "shotstream_sample_bytes_written_total", "counter",
         "float32 sample bytes received and written by WriteShots.", c.bytes_written.load());
  Metric(&out, "shotstream_writes_total", "counter",
         "WriteShots calls that created their dataset.", c.writes_committed.load());
  out += "# HELP shotstream_writes_failed_total WriteShots calls that left nothing, by "
         "status.\n"
         "# TYPE shotstream_writes_failed_total counter\n";
  for (int code = 1; code < 17; ++code) {
    absl::StrAppendFormat(&out, "shotstream_writes_failed_total{code=\"%s\"} %d\n",
                          kCodeNames[code], c.writes_failed_by_code[code].load());
  }
  out += "# HELP shotstream_dataset_ready 1 when the dataset is served, 0 when it failed or "
         "is being rebuilt.\n"
         "# TYPE shotstream_dataset_ready gauge\n";
  std::vector<std::shared_ptr<const dataset::Dataset>> snapshots;
  for (const dataset::DatasetEntry* e : datasets) {
    snapshots.push_back(e->dataset());
    absl::StrAppendFormat(&out, "shotstream_dataset_ready{dataset=\"%s\"} %d\n", e->name,
                          snapshots.back() != nullptr ? 1 : 0);
  }
  out += "# HELP shotstream_catalog_build_seconds Time to load or build the catalog.\n"
         "# TYPE shotstream_catalog_build_seconds gauge\n";
  for (size_t i = 0; i < datasets.size(); ++i) {
    if (snapshots[i] == nullptr) continue;
    absl::StrAppendFormat(&out, "shotstream_catalog_build_seconds{dataset=\"%s\"} %.6f\n",
                          datasets[i]->name, snapshots[i]->catalog_seconds());
  }
  out += "# HELP shotstream_dataset_traces Traces in the dataset.\n"
         "# TYPE shotstream_dataset_traces gauge\n";
  for (size_t i = 0; i < datasets.size(); ++i) {
    if (snapshots[i] == nullptr) continue;
    absl::StrAppendFormat(&out, "shotstream_dataset_traces{dataset=\"%s\"} %d\n",
                          datasets[i]->name, snapshots[i]->catalog().n_traces());
  }
  out += "# HELP shotstream_catalog_bytes The catalog's memory: heap, and read from the saved "
         "catalog's mapping.\n"
         "# TYPE shotstream_catalog_bytes gauge\n";
  for (size_t i = 0; i < datasets.size(); ++i) {
    if (snapshots[i] == nullptr) continue;
    const catalog::Catalog& cat = snapshots[i]->catalog();
    for (const auto& [in, bytes] : {std::pair<const char*, uint64_t>{"heap", cat.ResidentBytes()},
                                    {"mapping", cat.MappedBytes()}}) {
      absl::StrAppendFormat(&out, "shotstream_catalog_bytes{dataset=\"%s\",in=\"%s\"} %d\n",
                            datasets[i]->name, in, bytes);
    }
  }
  const io::OpenFileCache& files = io::OpenFileCache::Default();
  Metric(&out, "shotstream_open_files", "gauge",
         "Data files held open by the open-file cache (reads in progress may hold more).",
         static_cast<double>(files.open_files()));
  Metric(&out, "shotstream_open_files_limit", "gauge",
         "Data files the open-file cache holds at most (open_files).",
         static_cast<double>(files.capacity()));
  Metric(&out, "shotstream_file_opens_total", "counter",
         "Data files opened, first opens and reopens after eviction.",
         static_cast<double>(files.opens()));
  Metric(&out, "shotstream_file_evictions_total", "counter",
         "Data files closed by the open-file cache to make room.",
         static_cast<double>(files.evictions()));
  const io::TraceCrcBudget& crcs = io::TraceCrcBudget::Default();
  Metric(&out, "shotstream_crc_cache_bytes", "gauge",
         "Bytes of the CRC-32s kept for traces sent as stored (8 a trace of a file sent).",
         static_cast<double>(crcs.used()));
  Metric(&out, "shotstream_crc_cache_limit_bytes", "gauge",
         "Bytes those CRC-32s may take at most (crc_cache_bytes).",
         static_cast<double>(crcs.limit()));
  Metric(&out, "shotstream_crc_cache_refusals_total", "counter",
         "Files refused a block of CRC-32s by the budget: computed on every send instead.",
         static_cast<double>(crcs.refusals()));
  Metric(&out, "shotstream_touched_bytes_total", "counter",
         "Bytes of stored traces mapped in ahead of their send (a first pass; traces whose "
         "CRC-32s are kept are not touched again).",
         static_cast<double>(io::StoredBytesTouched()));
  return out;
}

struct MetricsHttpServer::Impl {
  mg_context* ctx = nullptr;
  std::function<std::string()> render;
};

namespace {

int Send(mg_connection* conn, const char* type, const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Connection: close\r\n\r\n",
            type, body.size());
  mg_write(conn, body.data(), body.size());
  return 200;
}

int HandleMetrics(mg_connection* conn, void* cbdata) {
  auto* render = static_cast<std::function<std::string()>*>(cbdata);
  return Send(conn, "text/plain; version=0.0.4; charset=utf-8", (*render)());
}

int HandleHealthz(mg_connection* conn, void*) { return Send(conn, "text/plain", "ok\n"); }

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, std::function<std::string()> render) {
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  server->impl_ = std::make_unique<Impl>();
  server->impl_->render = std::move(render);
  const char* options[] = {"listening_ports", listen.c_str(), "num_threads", "2", nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  server->impl_->ctx = mg_start(&callbacks, nullptr, options);
  if (server->impl_->ctx == nullptr) {
    const absl::Status why = ProbeListen(listen);
    return absl::UnavailableError(absl::StrCat(
        "--metrics_listen=", listen, ": ",
        why.ok() ? "cannot listen (invalid address?)" : std::string(why.message())));
  }
  mg_set_request_handler(server->impl_->ctx, "/metrics", HandleMetrics,
                         &server->impl_->render);
  mg_set_request_handler(server->impl_->ctx, "/healthz", HandleHealthz, nullptr);
  mg_server_port ports[4];
  const int n = mg_get_server_ports(server->impl_->ctx, 4, ports);
  if (n > 0) server->port_ = ports[0].port;
  return server;
}

namespace {

// A connection to 127.0.0.1:`port`, closed at once; nothing where that cannot connect.
void Knock(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  ::close(fd);
}

}  // namespace

MetricsHttpServer::~MetricsHttpServer() {
  if (impl_ == nullptr || impl_->ctx == nullptr) return;
  // mg_stop sets civetweb's stop flag, then joins its listening thread, which sees the
  // flag only between polls of 2 s; a connection wakes the poll (where the listener takes
  // loopback connections: an address of its own waits out the poll). Knocked until the
  // stop returns, since the flag's moment cannot be seen from here.
  absl::Notification stopped;
  std::thread stop([this, &stopped] {
    mg_stop(impl_->ctx);
    stopped.Notify();
  });
  while (!stopped.WaitForNotificationWithTimeout(absl::Milliseconds(20))) Knock(port_);
  stop.join();
}

}  // namespace shotstream::metrics
