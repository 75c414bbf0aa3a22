// The gRPC ShotStream service: a thin adapter over datasets and the reader pool.
//
// StreamShots runs on the callback API: no thread per stream. Each stream is a
// stream::ShotWindow (at most `queue_depth` shots read ahead by the reader pool while
// earlier shots are on the wire) behind a reactor that writes one chunk at a time.
#ifndef SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_
#define SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/dataset/dataset.h"
#include "server/service/access_policy.h"
#include "server/service/request_validation.h"
#include "server/service/service_counters.h"
#include "server/service/token_store.h"
#include "server/stream/reader_pool.h"

namespace grpc {
class Service;
}

namespace shotstream::service {

struct ServiceOptions {
  // Queue depths, chunk sizes and shots a request may ask for.
  RequestLimits limits;
  // Decoded shot bytes held by all streams together (0: no limit). Streams share it round
  // robin; a stream holding nothing always gets its next shot.
  uint64_t max_inflight_bytes = defaults::kMaxInflightBytes;
  // Send samples that need no decoding (IEEE float32 of mapped files: little-endian ones
  // to every client, big-endian ones to clients that accept them) as slices over the
  // file's mapping, without copying them (--zero_copy).
  bool zero_copy = true;
  // Testing only: flip one sample byte of this shot's first chunk after its checksum was
  // computed, so that clients' verification can be tested end to end.
  std::optional<int64_t> corrupt_shot_for_testing;
  // Where the service counts; null: it keeps its own.
  ServiceCounters* counters = nullptr;
  // Concurrent StreamShots calls, in all and from one peer address; above them a new
  // stream gets RESOURCE_EXHAUSTED naming the limit.
  uint32_t max_streams = defaults::kMaxStreams;
  uint32_t max_streams_per_peer = defaults::kMaxStreamsPerPeer;
  // When set, every RPC needs `authorization: Bearer <token>` (else UNAUTHENTICATED).
  const TokenStore* tokens = nullptr;
  // Which datasets each token may read (others: PERMISSION_DENIED, and ListDatasets
  // leaves them out); see AccessPolicy.
  AccessRules access;
  // Per-stream log lines (start and end, with a stream id) on stderr.
  bool log_streams = true;
  // Jobs (StreamJob): where their progress is kept (empty: in memory only), and how long
  // a job with no consumer is kept.
  std::string job_dir;
  absl::Duration job_idle_timeout = absl::Minutes(30);
  // WriteShots: where written datasets go (empty: writing is off, FAILED_PRECONDITION),
  // and how a written file is loaded into its new entry (the server's dataset settings,
  // its change hook and start-up lines).
  std::string write_dir;
  std::function<void(dataset::DatasetEntry*, const std::string&)> load_written;
  std::function<void(const dataset::DatasetEntry&)> written_published;  // may be empty
  // When it reads true, new streams get UNAVAILABLE (the server is shutting down);
  // running streams go on.
  const std::atomic<bool>* draining = nullptr;
};


// Creates the service. `datasets` and `pool` must outlive it; written datasets are added
// to `datasets` (WriteShots).
std::unique_ptr<grpc::Service> MakeShotStreamService(dataset::DatasetRegistry* datasets,
                                                     stream::ReaderPool* pool,
                                                     const ServiceOptions& options);

// Finishes every stream `service` (made by MakeShotStreamService) is running with
// `status`, as soon as each has no write on the wire: for a shutdown whose grace period
// is over, so that clients hear why ("the server is shutting down") and resume elsewhere.
void CutAllStreams(grpc::Service* service, const absl::Status& status);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_
