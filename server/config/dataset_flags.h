// Dataset names, and --dataset flags taken out of argv before absl parses the rest: absl's vector flags
// split on commas, which globs may hold, and the place of a per-dataset flag among them
// matters (one between two --dataset flags is refused as ambiguous).
//
// Thread-compatible: pure functions over their arguments.
#ifndef SHOTSTREAM_SERVER_CONFIG_DATASET_FLAGS_H_
#define SHOTSTREAM_SERVER_CONFIG_DATASET_FLAGS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shotstream::config {

// The flags that apply to every --dataset flag alike (not to datasets of --config).
extern const absl::string_view kPerDatasetFlags[10];

// Moves every --dataset=VALUE (or --dataset VALUE) of argv into *values, in order, and
// compacts argv. INVALID_ARGUMENT when a per-dataset flag stands between two --dataset
// flags: it applies to both, which its place does not suggest.
absl::Status TakeDatasetFlags(int* argc, char** argv, std::vector<std::string>* values);

// "--dataset=NAME=GLOB" parsing; the glob may hold commas to give several patterns.
absl::StatusOr<std::pair<std::string, std::string>> SplitDatasetFlag(absl::string_view flag);

// Names may be letters, digits, '.', '_' and '-' (they never become paths), 1 to 128.
absl::Status ValidateDatasetName(absl::string_view name);

}  // namespace shotstream::config

#endif  // SHOTSTREAM_SERVER_CONFIG_DATASET_FLAGS_H_
