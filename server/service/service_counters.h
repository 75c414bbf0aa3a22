// ServiceCounters: what the service is doing now and has done, for /metrics, the health
// log and the tests. Every field is an atomic, safe to read at any time.
#ifndef SHOTSTREAM_SERVER_SERVICE_SERVICE_COUNTERS_H_
#define SHOTSTREAM_SERVER_SERVICE_SERVICE_COUNTERS_H_

#include <atomic>
#include <cstdint>

#include "server/jobs/job_registry.h"
#include "server/stream/window_counters.h"

namespace shotstream::service {

// The service's RPCs, for the counters by RPC and the log.
enum class Rpc { kListDatasets, kGetDataset, kStreamShots, kStreamJob, kWriteShots, kCommitJob };
inline constexpr int kRpcs = 6;
inline const char* RpcName(Rpc rpc) {
  switch (rpc) {
    case Rpc::kListDatasets: return "ListDatasets";
    case Rpc::kGetDataset: return "GetDataset";
    case Rpc::kStreamShots: return "StreamShots";
    case Rpc::kStreamJob: return "StreamJob";
    case Rpc::kWriteShots: return "WriteShots";
    case Rpc::kCommitJob: return "CommitJob";
  }
  return "?";
}

// The windows' counters (shots held and sent, reads, latency), and the streams'.
struct ServiceCounters : stream::WindowCounters {
  std::atomic<int64_t> active_streams{0};
  std::atomic<int64_t> streams_started{0};
  std::atomic<int64_t> streams_cancelled{0};
  // Calls of any RPC refused by the gate (any reason), in all, by status code, and by RPC
  // (service::Rpc) and code.
  std::atomic<int64_t> streams_rejected{0};
  std::atomic<int64_t> rejected_by_code[17] = {};
  std::atomic<int64_t> rejected_by_rpc[kRpcs][17] = {};
  // Accepted StreamShots and StreamJob calls finished, by gRPC status code (0..16):
  // streams_started is their sum plus the streams running.
  std::atomic<int64_t> finished_by_code[17] = {};
  // Admitted calls of every RPC ended (Gate::Pass::End), by RPC and code.
  std::atomic<int64_t> ended_by_rpc[kRpcs][17] = {};
  // Jobs (StreamJob): held now, shots handed, returned, done.
  jobs::JobCounters jobs;
  // WriteShots: shots and float32 sample bytes written (of writes that were committed
  // or not), writes committed, and writes failed by status code.
  std::atomic<int64_t> shots_written{0};
  std::atomic<int64_t> bytes_written{0};
  std::atomic<int64_t> writes_committed{0};
  std::atomic<int64_t> writes_failed_by_code[17] = {};
};

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_SERVICE_COUNTERS_H_
