// --dataset flags, taken out of argv before absl parses the rest: absl's vector flags
// split on commas, which globs may hold, and the place of a per-dataset flag among them
// matters (one between two --dataset flags is refused as ambiguous).
//
// Thread-compatible: pure functions over their arguments.
#ifndef SHOTSTREAM_SERVER_CONFIG_DATASET_FLAGS_H_
#define SHOTSTREAM_SERVER_CONFIG_DATASET_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shotstream::config {

// The flags that apply to every --dataset flag alike (not to datasets of --config).
extern const absl::string_view kPerDatasetFlags[9];

// Moves every --dataset=VALUE (or --dataset VALUE) of argv into *values, in order, and
// compacts argv. INVALID_ARGUMENT when a per-dataset flag stands between two --dataset
// flags: it applies to both, which its place does not suggest.
absl::Status TakeDatasetFlags(int* argc, char** argv, std::vector<std::string>* values);

}  // namespace shotstream::config

#endif  // SHOTSTREAM_SERVER_CONFIG_DATASET_FLAGS_H_
