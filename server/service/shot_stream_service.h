// The gRPC ShotStream service: a thin adapter over datasets and the reader pool.
//
// StreamShots runs on the callback API: no thread per stream. Each stream keeps a window
// of at most `queue_depth` shots (read ahead by the reader pool while earlier shots are on
// the wire); the next write starts only when the previous one is done.
#ifndef SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_
#define SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_

#include <cstdint>
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

struct ServiceOptions {
  uint32_t default_queue_depth = 2;
  uint32_t max_queue_depth = 16;
  uint64_t max_chunk_bytes = 4 << 20;
  uint64_t max_shots_per_request = 10'000'000;
  // Testing only: flip one sample byte of this shot's first chunk after its checksum was
  // computed, so that clients' verification can be tested end to end.
  std::optional<int64_t> corrupt_shot_for_testing;
};


// Creates the service. `datasets` and `pool` must outlive it; `datasets` is not changed
// after this call.
std::unique_ptr<grpc::Service> MakeShotStreamService(const std::vector<DatasetEntry>* datasets,
                                                     stream::ReaderPool* pool,
                                                     const ServiceOptions& options);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_SHOT_STREAM_SERVICE_H_
