// A dataset as a stream window's ShotSource. Thread-safe (as Dataset is).
#ifndef SHOTSTREAM_SERVER_STREAM_DATASET_SHOT_SOURCE_H_
#define SHOTSTREAM_SERVER_STREAM_DATASET_SHOT_SOURCE_H_

#include <memory>

#include "server/stream/shot_source.h"

namespace shotstream::dataset {
class Dataset;
}

namespace shotstream::stream {

// The source keeps `dataset` (the snapshot a stream began with) alive.
std::shared_ptr<const ShotSource> MakeDatasetShotSource(
    std::shared_ptr<const dataset::Dataset> dataset);

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_DATASET_SHOT_SOURCE_H_
