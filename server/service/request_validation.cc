#include "server/service/request_validation.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shotstream::service {

absl::Status NotReadyError(const DatasetEntry& entry) {
  if (entry.state() == DatasetEntry::State::kRebuilding) return entry.status();
  // The message already names the dataset, the file, the byte and the reason.
  return absl::FailedPreconditionError(absl::StrCat(
      "dataset '", entry.name, "' failed to load (retrying will not help until the file "
      "or the configuration is fixed): ", entry.status().message()));
}

absl::StatusOr<ValidatedRequest> ValidateStreamRequest(const v1::StreamShotsRequest& r,
                                                       const std::vector<DatasetEntry>& datasets,
                                                       const RequestLimits& limits) {
  const DatasetEntry* e = nullptr;
  for (const DatasetEntry& d : datasets) {
    if (d.name == r.dataset()) e = &d;
  }
  if (e == nullptr) return absl::NotFoundError(absl::StrCat("unknown dataset '", r.dataset(), "'"));
  std::shared_ptr<const dataset::Dataset> d = e->dataset();
  if (d == nullptr) return NotReadyError(*e);
  if (static_cast<uint64_t>(r.shot_ids_size()) > limits.max_shots_per_request) {
    return absl::InvalidArgumentError(
        absl::StrCat("request names ", r.shot_ids_size(), " shots; the limit "
                     "(max_shots_per_request) is ", limits.max_shots_per_request));
  }
  if (r.queue_depth() > limits.max_queue_depth) {
    return absl::InvalidArgumentError(absl::StrCat("queue_depth ", r.queue_depth(),
                                                   " is above the limit (max_queue_depth) of ",
                                                   limits.max_queue_depth));
  }
  ValidatedRequest v;
  v.dataset = std::move(d);
  for (const std::string& h : r.headers()) {
    auto sel = segy::ResolveHeader(h);
    if (!sel.ok()) return sel.status();
    v.headers.push_back(*std::move(sel));
  }
  v.shot_ids.assign(r.shot_ids().begin(), r.shot_ids().end());
  for (int64_t id : v.shot_ids) {
    if (v.dataset->catalog().Find(id) == nullptr) {
      return absl::NotFoundError(absl::StrCat("dataset '", r.dataset(), "' has no shot ", id));
    }
  }
  v.queue_depth = r.queue_depth() == 0 ? std::max<uint32_t>(1, limits.default_queue_depth)
                                       : r.queue_depth();
  v.max_chunk_bytes = r.max_chunk_bytes() == 0
                          ? limits.default_chunk_bytes
                          : std::min<uint64_t>(r.max_chunk_bytes(), limits.max_chunk_bytes);
  return v;
}

}  // namespace shotstream::service
