#include "server/source/keyed_catalog.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shotstream::source {

catalog::Catalog CatalogByKey(std::vector<KeyedTrace> rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const KeyedTrace& a, const KeyedTrace& b) { return a.shot_id < b.shot_id; });
  std::vector<catalog::ShotEntry> shots;
  std::vector<io::TraceRef> traces;
  traces.reserve(rows.size());
  for (size_t i = 0; i < rows.size();) {
    size_t j = i;
    while (j < rows.size() && rows[j].shot_id == rows[i].shot_id) traces.push_back(rows[j++].trace);
    shots.push_back({rows[i].shot_id, i, static_cast<uint32_t>(j - i)});
    i = j;
  }
  return catalog::Catalog::FromColumns(std::move(shots), std::move(traces));
}

absl::StatusOr<int64_t> ShotIdOf(double v, const std::string& where) {
  if (!(v == std::nearbyint(v)) || std::abs(v) > 9.0e15) {
    return absl::InvalidArgumentError(absl::StrCat(where, " is ", v, ", not an integer shot id"));
  }
  return static_cast<int64_t>(v);
}

absl::Status CheckColumnKey(const std::string& key, absl::string_view format) {
  if (key.empty() || key == "source_xy" || absl::StartsWith(key, "byte:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shot_key '", key, "': ", format, " shots are keyed by a header column's name "
        "(field_record unless shot_key names another)"));
  }
  return absl::OkStatus();
}

}  // namespace shotstream::source
