#include "server/source/keyed_catalog.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shotstream::source {

catalog::Catalog CatalogByKey(const std::vector<KeyedTrace>& rows) {
  uint32_t n_files = 0;
  for (const KeyedTrace& r : rows) n_files = std::max(n_files, r.trace.file_id + 1);
  catalog::CatalogBuilder builder{std::vector<catalog::FileGeometry>(n_files)};
  for (const KeyedTrace& r : rows) builder.Add(r.shot_id, r.trace.file_id, r.trace.offset);
  return std::move(builder).Finish();
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
