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

  absl::StatusOr<dataset::ShotData> ReadShot(int64_t shot_id, const dataset::ReadPlan& plan,
                                             ShotReadCost* cost) const override {
    io::ReadStats stats;
    absl::StatusOr<dataset::ShotData> shot = dataset_->ReadShot(shot_id, plan, &stats);
    Count(stats, cost);
    return shot;
  }

  absl::StatusOr<dataset::ShotHead> ReadShotHead(int64_t shot_id, const dataset::ReadPlan& plan,
                                                 uint64_t piece_bytes,
                                                 ShotReadCost* cost) const override {
    io::ReadStats stats;
    absl::StatusOr<dataset::ShotHead> head =
        dataset_->ReadShotHead(shot_id, plan, piece_bytes, &stats);
    Count(stats, cost);
    return head;
  }

  absl::StatusOr<dataset::ShotData> ReadPiece(const dataset::ShotHead& head, size_t piece,
                                              const dataset::ReadPlan& plan,
                                              ShotReadCost* cost) const override {
    io::ReadStats stats;
    absl::StatusOr<dataset::ShotData> data = dataset_->ReadPiece(head, piece, plan, &stats);
    Count(stats, cost);
    return data;
  }

 private:
  static void Count(const io::ReadStats& stats, ShotReadCost* cost) {
    cost->reads += stats.reads;
    cost->bytes_read += stats.bytes_read;
    cost->bytes_wanted += stats.bytes_wanted;
  }

  const std::shared_ptr<const dataset::Dataset> dataset_;
};

}  // namespace

std::shared_ptr<const ShotSource> MakeDatasetShotSource(
    std::shared_ptr<const dataset::Dataset> dataset) {
  return std::make_shared<DatasetShotSource>(std::move(dataset));
}

}  // namespace shotstream::stream
