#include "server/stream/dataset_shot_source.h"

#include <utility>

#include "server/dataset/dataset.h"

namespace shotstream::stream {
namespace {

class DatasetShotSource final : public ShotSource {
 public:
  explicit DatasetShotSource(std::shared_ptr<const dataset::Dataset> dataset)
      : dataset_(std::move(dataset)) {}

  double sample_interval_us() const override { return dataset_->sample_interval_us(); }

  uint64_t ShotBytes(int64_t shot_id, uint32_t samples_per_trace) const override {
    const catalog::ShotEntry* e = dataset_->catalog().Find(shot_id);
    const uint32_t ns = samples_per_trace == 0 ? dataset_->n_samples() : samples_per_trace;
    return e == nullptr ? 0 : uint64_t{e->n_traces} * ns * sizeof(float);
  }

  absl::StatusOr<dataset::ShotData> ReadShot(int64_t shot_id, const ShotReadOptions& options,
                                             ShotReadCost* cost) const override {
    io::ReadStats stats;
    absl::StatusOr<dataset::ShotData> shot =
        dataset_->ReadShot(shot_id, options.headers, options.max_chunk_bytes, &stats,
                           options.zero_copy, options.raw_trace_headers, options.selection);
    cost->reads = stats.reads;
    cost->bytes_read = stats.bytes_read;
    cost->bytes_wanted = stats.bytes_wanted;
    return shot;
  }

  absl::Status TouchStored(int64_t shot_id, absl::Span<const uint8_t* const> traces,
                           absl::Span<const uint32_t> files, uint32_t n_samples) const override {
    return dataset_->TouchStored(shot_id, traces, files, n_samples);
  }

  absl::StatusOr<uint32_t> StoredCrc(int64_t shot_id, absl::Span<const uint8_t* const> traces,
                                     absl::Span<const uint32_t> files, uint32_t n_samples,
                                     uint32_t crc) const override {
    return dataset_->StoredCrc(shot_id, traces, files, n_samples, crc);
  }

 private:
  const std::shared_ptr<const dataset::Dataset> dataset_;
};

}  // namespace

std::shared_ptr<const ShotSource> MakeDatasetShotSource(
    std::shared_ptr<const dataset::Dataset> dataset) {
  return std::make_shared<DatasetShotSource>(std::move(dataset));
}

}  // namespace shotstream::stream
