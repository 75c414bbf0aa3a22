// The gRPC ShotStream service: a thin adapter. Each handler takes the call's messages, asks
// the Gate, and hands the call to its reactor over transport-free cores (the stream
// window, the job registry, the write session); everything it works with is built by the
// composition root (server/app) and passed in as ServiceParts.
//
// StreamShots and StreamJob run on the callback API: no thread per stream. Reactions never
// block: shot reads run on the reader executor, and what touches files for writes and jobs
// (appends, fsyncs, renames, catalog scans, job files) on the disk executor.
#ifndef SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_
#define SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "server/dataset/dataset_registry.h"
#include "server/jobs/job_registry.h"
#include "server/service/gate.h"
#include "server/service/request_validation.h"
#include "server/service/service_counters.h"
#include "server/stream/byte_budget.h"
#include "server/stream/encoding_advisor.h"
#include "server/stream/stall_watch.h"
#include "server/stream/executor.h"

namespace grpc {
class Service;
}

namespace shotstream::service {

// What the service is made of. The composition root builds and owns every part, and they
// outlive the service.
struct ServiceParts {
  dataset::DatasetRegistry* datasets = nullptr;
  Gate* gate = nullptr;
  stream::Executor* readers = nullptr;  // shot reads and encodes, windows' on_ready
  stream::Executor* disk = nullptr;      // write sessions: appends, commits (fsync, rename)
  stream::Executor* job_disk = nullptr;  // job starts and commits (their files), apart
  stream::ByteBudget* budget = nullptr;  // null: no in-flight budget
  // Has stalled streams (and job streams) give back their read-ahead; null: none do.
  stream::StallWatch* stall_watch = nullptr;
  stream::EncodingAdvisor* advisor = nullptr;
  jobs::JobRegistry* jobs = nullptr;
  ServiceCounters* counters = nullptr;
  // Queue depths, chunk sizes and shots a request may ask for.
  RequestLimits limits;
  // Send samples that need no decoding (IEEE float32 of mapped files: little-endian ones
  // to every client, big-endian ones to clients that accept them) as slices over the
  // file's mapping, without copying them (--zero_copy).
  bool zero_copy = true;
  // Shots of more float32 bytes are read and sent in pieces of about this size; 0: never.
  uint64_t piece_bytes = 0;
  bool log_streams = true;  // a stderr line per stream, job stream and write
  // GetDataset's largest page of shots (what page_size 0, or a larger one, gets; the
  // page's next_page_token names the rest): its one message, built on gRPC's callback
  // thread, stays bounded however many shots a dataset has.
  uint32_t max_page_shots = 250'000;
  // WriteShots: where written datasets go (empty: writing is off, FAILED_PRECONDITION),
  // how a written file is loaded into its new entry (the server's dataset settings, its
  // change hook and start-up lines), and who hears it is visible (health).
  std::string write_dir;
  std::function<void(dataset::DatasetEntry*, const std::string&)> load_written;
  std::function<void(const dataset::DatasetEntry&)> written_published;  // may be empty
  // Testing only: flip one sample byte of this shot's first chunk after its checksum was
  // computed, so that clients' verification can be tested end to end.
  std::optional<int64_t> corrupt_shot_for_testing;
};

// Creates the service over `parts` (every pointer but budget and stall_watch set).
std::unique_ptr<grpc::Service> MakeShotStreamService(const ServiceParts& parts);

// Finishes every stream `service` (made by MakeShotStreamService) is running with
// `status`, as soon as each has no write on the wire: for a shutdown whose grace period
// is over, so that clients hear why ("the server is shutting down") and resume elsewhere.
void CutAllStreams(grpc::Service* service, const absl::Status& status);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_
