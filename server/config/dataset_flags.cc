#include "server/config/dataset_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shotstream::config {

const absl::string_view kPerDatasetFlags[10] = {
    "shot_key",       "byte_order",          "io",     "max_gap_bytes",     "max_read_bytes",
    "check_trace_lengths", "format", "h5_path", "array_path",
    "sample_interval_us"};

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

absl::StatusOr<std::pair<std::string, std::string>> SplitDatasetFlag(absl::string_view flag) {
  const size_t eq = flag.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == flag.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dataset='", flag, "': expected NAME=GLOB, e.g. line1=/data/line1/*.sgy"));
  }
  std::string name(flag.substr(0, eq));
  if (absl::Status s = ValidateDatasetName(name); !s.ok()) return s;
  return std::make_pair(name, std::string(flag.substr(eq + 1)));
}

absl::Status ValidateDatasetName(absl::string_view name) {
  if (name.empty() || name.size() > 128) {
    return absl::InvalidArgumentError("dataset name must be 1 to 128 characters");
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dataset name '", name, "' may hold only letters, digits, '.', '_' and '-'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace shotstream::config
