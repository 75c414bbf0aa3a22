// Everything a StreamShots request can get wrong, checked before any data is sent.
// Transport-free (no gRPC), so that it can be fuzzed and tested on its own.
//
// Thread-safe: a pure function over immutable datasets.
#ifndef SHOTSTREAM_SERVER_SERVICE_REQUEST_VALIDATION_H_
#define SHOTSTREAM_SERVER_SERVICE_REQUEST_VALIDATION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/dataset/dataset.h"
#include "server/segy/trace_header.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::service {

// A dataset as configured: loaded, or failed with the reason.
struct DatasetEntry {
  std::string name;
  std::unique_ptr<dataset::Dataset> dataset;  // null when loading failed
  absl::Status status;
};

// A dataset that failed to load, for GetDataset and StreamShots: FAILED_PRECONDITION
// (permanent: retrying will not help) with the file, byte and reason of its load error.
absl::Status FailedDatasetError(const DatasetEntry& entry);

struct RequestLimits {
  uint64_t max_shots_per_request = 1'000'000;
  uint32_t max_queue_depth = 16;
  uint32_t default_queue_depth = 2;
  uint64_t default_chunk_bytes = 1 << 20;
  uint64_t max_chunk_bytes = 64ull << 20;
};

struct ValidatedRequest {
  const dataset::Dataset* dataset = nullptr;
  std::vector<int64_t> shot_ids;
  std::vector<segy::HeaderSelector> headers;
  uint32_t queue_depth = 2;       // 1 .. max_queue_depth
  uint64_t max_chunk_bytes = 0;   // 1 .. limits.max_chunk_bytes
};

// NOT_FOUND: unknown dataset or shot id (named); FAILED_PRECONDITION: the dataset failed
// to load (FailedDatasetError);
// INVALID_ARGUMENT: over a limit (named) or an unknown header field.
absl::StatusOr<ValidatedRequest> ValidateStreamRequest(const v1::StreamShotsRequest& request,
                                                       const std::vector<DatasetEntry>& datasets,
                                                       const RequestLimits& limits);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_REQUEST_VALIDATION_H_
