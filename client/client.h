// C++ client library for the shotstream service.
//
// A Client is thread-safe (it wraps a gRPC channel). A ShotReader is used by one thread:
// it receives ahead on its own thread into a bounded queue of `queue_depth` shots and
// hands them out in request order, each verified against its CRC-32.
#ifndef SHOTSTREAM_CLIENT_CLIENT_H_
#define SHOTSTREAM_CLIENT_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shotstream::client {

struct DatasetSummary {
  std::string name;
  std::string state;  // READY or FAILED
  std::string error;
  uint64_t n_traces = 0;
  uint64_t n_shots = 0;
  uint32_t n_samples = 0;
  double sample_interval_us = 0;
  int sample_format = 0;
  std::string shot_key;
  uint32_t n_files = 0;
  std::vector<int64_t> shot_ids;              // GetDataset only
  std::vector<uint32_t> shot_trace_counts;    // GetDataset only
};

// One shot gather: float32 samples [n_traces][n_samples] and header columns.
struct Shot {
  uint32_t index = 0;  // position in the request
  int64_t shot_id = 0;
  uint32_t n_traces = 0;
  uint32_t n_samples = 0;
  double sample_interval_us = 0;
  std::vector<float> samples;
  std::vector<std::pair<std::string, std::vector<double>>> headers;
  const std::vector<double>* header(const std::string& name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return &v;
    }
    return nullptr;
  }
};

struct StreamOptions {
  uint32_t queue_depth = 2;           // server read-ahead and client receive-ahead
  std::vector<std::string> headers;   // trace header fields to return
  uint64_t max_chunk_bytes = 0;       // 0: the server's default
};

class ShotReader {
 public:
  virtual ~ShotReader() = default;
  // The next shot: true with *shot filled, false at the end of the stream, or the error
  // (gRPC's code and the server's message; DATA_LOSS for a checksum mismatch).
  virtual absl::StatusOr<bool> Next(Shot* shot) = 0;
  // Stops the stream; Next then returns CANCELLED or the end.
  virtual void Cancel() = 0;
};

class Client {
 public:
  // Connects lazily to HOST:PORT; fails only for a malformed target.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& target);
  ~Client();

  absl::StatusOr<std::vector<DatasetSummary>> ListDatasets();
  absl::StatusOr<DatasetSummary> GetDataset(const std::string& name);
  std::unique_ptr<ShotReader> Stream(const std::string& dataset, std::vector<int64_t> shot_ids,
                                     const StreamOptions& options);

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// CRC-32 (zlib polynomial) of bytes, continuing from `crc` (start with 0).
uint32_t Crc32(uint32_t crc, const void* data, size_t size);

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_CLIENT_H_
