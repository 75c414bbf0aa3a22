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
#include "absl/types/span.h"
#include "server/config/defaults.h"
#include "server/dataset/dataset.h"
#include "server/dataset/dataset_entry.h"
#include "server/dataset/dataset_registry.h"
#include "server/dataset/shot_plan.h"
#include "segy/trace_header.h"
#include "wire/encoding.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::service {

using DatasetEntry = dataset::DatasetEntry;

// Why a dataset that is not READY cannot be read, for GetDataset and StreamShots: for a
// FAILED one FAILED_PRECONDITION (permanent: retrying will not help) with the file, byte
// and reason of its load error; for one being rebuilt UNAVAILABLE (transient).
absl::Status NotReadyError(const DatasetEntry& entry);

// What one request may ask, and what it gets when it does not ask (server/config/defaults.h).
struct RequestLimits {
  uint64_t max_shots_per_request = defaults::kMaxShotsPerRequest;
  uint32_t max_queue_depth = defaults::kMaxQueueDepth;
  uint32_t default_queue_depth = defaults::kDefaultQueueDepth;
  uint64_t default_chunk_bytes = defaults::kDefaultChunkBytes;
  uint64_t max_chunk_bytes = defaults::kMaxChunkBytes;
};

struct ValidatedRequest {
  std::shared_ptr<const dataset::Dataset> dataset;  // held for the stream's life
  std::vector<int64_t> shot_ids;
  uint32_t queue_depth = 2;  // 1 .. max_queue_depth
  dataset::ShotSelection selection;  // encoding as asked (kAuto: still to plan)
};

// The shots of a stream as StreamShotsRequest and JobStart both give them: dataset, shot
// ids, queue depth and selection. NOT_FOUND: unknown dataset or shot id (named); a dataset
// that is not READY: NotReadyError; INVALID_ARGUMENT: over a limit (named), an unknown
// header field, a window outside the traces, a condition on an unknown header or with
// low > high, an unknown encoding or a negative tolerance (each naming the request field).
absl::StatusOr<ValidatedRequest> ValidateShots(const std::string& dataset,
                                               absl::Span<const int64_t> shot_ids,
                                               uint32_t queue_depth,
                                               const v1::ShotSelection& selection,
                                               const dataset::DatasetRegistry& datasets,
                                               const RequestLimits& limits);

// ValidateShots of a StreamShotsRequest, or of a job's first message.
absl::StatusOr<ValidatedRequest> ValidateStreamRequest(const v1::StreamShotsRequest& request,
                                                       const dataset::DatasetRegistry& datasets,
                                                       const RequestLimits& limits);
absl::StatusOr<ValidatedRequest> ValidateJobStart(const v1::JobStart& start,
                                                  const dataset::DatasetRegistry& datasets,
                                                  const RequestLimits& limits);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_REQUEST_VALIDATION_H_
