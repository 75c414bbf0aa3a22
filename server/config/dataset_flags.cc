#include "server/config/dataset_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shotstream::config {

const absl::string_view kPerDatasetFlags[9] = {
    "shot_key",       "byte_order",          "io",     "max_gap_bytes",     "max_read_bytes",
    "check_trace_lengths", "format", "h5_path", "sample_interval_us"};

absl::Status TakeDatasetFlags(int* argc, char** argv, std::vector<std::string>* values) {
  int out = 1;
  std::string between;  // a per-dataset flag seen after a --dataset flag
  for (int i = 1; i < *argc; ++i) {
    absl::string_view a = argv[i];
    const bool dataset = absl::StartsWith(a, "--dataset=") || a == "--dataset";
    if (dataset && !between.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          between, " stands between --dataset flags, but per-dataset flags apply to every "
          "--dataset flag alike; give them once, or put datasets with different settings in "
          "--config"));
    }
    if (absl::StartsWith(a, "--dataset=")) {
      values->emplace_back(a.substr(10));
      continue;
    }
    if (a == "--dataset" && i + 1 < *argc) {
      values->emplace_back(argv[++i]);
      continue;
    }
    if (!values->empty()) {
      for (absl::string_view f : kPerDatasetFlags) {
        if (absl::StartsWith(a, absl::StrCat("--", f, "=")) || a == absl::StrCat("--", f) ||
            a == absl::StrCat("--no", f)) {
          between = std::string(a);
        }
      }
    }
    argv[out++] = argv[i];
  }
  *argc = out;
  argv[out] = nullptr;
  return absl::OkStatus();
}

}  // namespace shotstream::config
