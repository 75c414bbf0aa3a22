// Fuzzes StreamShots request validation: any bytes parsed as a StreamShotsRequest, checked
// against a real dataset (written once at start-up). A valid request must only name
// shots that exist and stay within the limits.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "server/service/request_validation.h"

namespace {

using shotstream::service::DatasetEntry;

shotstream::dataset::DatasetRegistry* MakeDatasets() {
  const std::string path = "/tmp/shotstream-fuzz-" + std::to_string(getpid()) + ".sgy";
  std::string bytes(3600, '\0');
  bytes[3217 - 1] = 0x03; bytes[3218 - 1] = static_cast<char>(0xe8);  // 1000 us
  bytes[3222 - 1] = 4;                                                // 4 samples
  bytes[3226 - 1] = 5;                                                // IEEE
  for (int t = 0; t < 6; ++t) {
    std::string h(240, '\0');
    h[11] = static_cast<char>(1 + t / 2);  // field record 1, 1, 2, 2, 3, 3
    h[115] = 4;
    bytes += h + std::string(16, '\0');
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  auto* datasets = new shotstream::dataset::DatasetRegistry(2);
  shotstream::dataset::DatasetSpec spec;
  spec.name = "d";
  spec.globs = {path};
  datasets->at(0).name = "d";
  datasets->at(0).SetLoaded(std::move(*shotstream::dataset::Dataset::Load(spec)));
  datasets->at(1).name = "broken";
  datasets->at(1).SetFailed(absl::DataLossError("fuzz"));
  return datasets;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static shotstream::dataset::DatasetRegistry* datasets = MakeDatasets();
  if (size < 1) return 0;
  shotstream::v1::StreamShotsRequest r;
  if (!r.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  if (data[0] & 1) r.set_dataset("d");  // reach past the dataset lookup often
  shotstream::service::RequestLimits limits;
  limits.max_shots_per_request = 1000;
  auto v = shotstream::service::ValidateStreamRequest(r, *datasets, limits);
  if (!v.ok()) return 0;
  if (v->queue_depth < 1 || v->queue_depth > limits.max_queue_depth) __builtin_trap();
  const shotstream::dataset::ShotSelection& sel = v->selection;
  if (sel.max_chunk_bytes < 1 || sel.max_chunk_bytes > limits.max_chunk_bytes) __builtin_trap();
  if (sel.count == 0 || uint64_t{sel.start} + sel.count > v->dataset->n_samples()) __builtin_trap();
  if (v->shot_ids.size() > limits.max_shots_per_request) __builtin_trap();
  for (int64_t id : v->shot_ids) {
    if (v->dataset->catalog().Find(id) == nullptr) __builtin_trap();
  }
  return 0;
}
