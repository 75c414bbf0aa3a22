// The gRPC ShotStream service: a thin adapter over datasets and the reader pool.
//
// StreamShots runs on the callback API: no thread per stream. Each stream keeps a window
// of at most `queue_depth` shots (read ahead by the reader pool while earlier shots are on
// the wire); the next write starts only when the previous one is done.
#ifndef SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_
#define SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_

#include <cstdint>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/dataset/dataset.h"
#include "server/stream/reader_pool.h"

namespace grpc {
class Service;
}

namespace shotstream::service {

// A dataset as configured: loaded, or failed with the reason.
struct DatasetEntry {
  std::string name;
  std::unique_ptr<dataset::Dataset> dataset;  // null when loading failed
  absl::Status status;
};

// What the service is doing now and has done; every field is safe to read at any time.
struct ServiceCounters {
  std::atomic<int64_t> active_streams{0};
  std::atomic<int64_t> streams_started{0};
  std::atomic<int64_t> streams_cancelled{0};
  std::atomic<int64_t> shots_held{0};            // read or being read, not yet fully sent
  std::atomic<int64_t> max_shots_held_by_one_stream{0};
  std::atomic<int64_t> reads_in_flight{0};
  std::atomic<int64_t> shots_sent{0};
  std::atomic<int64_t> bytes_sent{0};
};

struct ServiceOptions {
  uint32_t default_queue_depth = 2;
  uint32_t max_queue_depth = 16;
  uint64_t max_chunk_bytes = 4 << 20;
  uint64_t max_shots_per_request = 10'000'000;
  // Testing only: flip one sample byte of this shot's first chunk after its checksum was
  // computed, so that clients' verification can be tested end to end.
  std::optional<int64_t> corrupt_shot_for_testing;
  // Where the service counts; null: it keeps its own.
  ServiceCounters* counters = nullptr;
};


// Creates the service. `datasets` and `pool` must outlive it; `datasets` is not changed
// after this call.
std::unique_ptr<grpc::Service> MakeShotStreamService(const std::vector<DatasetEntry>* datasets,
                                                     stream::ReaderPool* pool,
                                                     const ServiceOptions& options);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_
