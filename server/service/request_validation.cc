#include "server/service/request_validation.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wire/encoding_proto.h"

namespace shotstream::service {

absl::Status NotReadyError(const DatasetEntry& entry) {
  const DatasetEntry::State state = entry.state();
  if (state == DatasetEntry::State::kRebuilding || state == DatasetEntry::State::kLoading) {
    return entry.status();  // UNAVAILABLE, saying why
  }
  // The message already names the dataset, the file, the byte and the reason.
  return absl::FailedPreconditionError(absl::StrCat(
      "dataset '", entry.name, "' failed to load (retrying will not help until the file "
      "or the configuration is fixed): ", entry.status().message()));
}

absl::StatusOr<ValidatedRequest> ValidateStreamRequest(const v1::StreamShotsRequest& r,
                                                       const dataset::DatasetRegistry& datasets,
                                                       const RequestLimits& limits) {
  return ValidateShots(r.dataset(), r.shot_ids(), r.queue_depth(), r.selection(), datasets,
                       limits);
}

absl::StatusOr<ValidatedRequest> ValidateJobStart(const v1::JobStart& j,
                                                  const dataset::DatasetRegistry& datasets,
                                                  const RequestLimits& limits) {
  return ValidateShots(j.dataset(), j.shot_ids(), j.queue_depth(), j.selection(), datasets,
                       limits);
}

absl::StatusOr<ValidatedRequest> ValidateShots(const std::string& name,
                                               absl::Span<const int64_t> shot_ids,
                                               uint32_t queue_depth,
                                               const v1::ShotSelection& r,
                                               const dataset::DatasetRegistry& datasets,
                                               const RequestLimits& limits) {
  const DatasetEntry* e = datasets.Find(name);
  if (e == nullptr) return absl::NotFoundError(absl::StrCat("unknown dataset '", name, "'"));
  std::shared_ptr<const dataset::Dataset> d = e->dataset();
  if (d == nullptr) return NotReadyError(*e);
  if (shot_ids.size() > limits.max_shots_per_request) {
    return absl::InvalidArgumentError(
        absl::StrCat("request names ", shot_ids.size(), " shots; the limit "
                     "(max_shots_per_request) is ", limits.max_shots_per_request));
  }
  if (queue_depth > limits.max_queue_depth) {
    return absl::InvalidArgumentError(absl::StrCat("queue_depth ", queue_depth,
                                                   " is above the limit (max_queue_depth) of ",
                                                   limits.max_queue_depth));
  }
  ValidatedRequest v;
  v.dataset = std::move(d);
  dataset::ShotSelection& s = v.selection;
  for (const std::string& h : r.headers()) {
    auto sel = v.dataset->ResolveHeader(h);
    if (!sel.ok()) return absl::InvalidArgumentError(absl::StrCat("headers: ", sel.status().message()));
    s.headers.push_back(*std::move(sel));
  }
  v.shot_ids.assign(shot_ids.begin(), shot_ids.end());
  for (int64_t id : v.shot_ids) {
    if (v.dataset->catalog().Find(id) == nullptr) {
      return absl::NotFoundError(absl::StrCat("dataset '", name, "' has no shot ", id));
    }
  }
  const uint32_t ns = v.dataset->n_samples();
  s.count = ns;
  if (r.has_window()) {
    const uint32_t start = r.window().start();
    const uint32_t stop = r.window().stop() == 0 ? ns : r.window().stop();
    if (start >= stop || stop > ns) {
      return absl::InvalidArgumentError(absl::StrCat(
          "window: samples [", start, ", ", r.window().stop(), ") are not within the traces' ",
          ns, " samples of dataset '", name, "' (need start < stop <= ", ns,
          "; stop 0 means to the end)"));
    }
    s.start = start;
    s.count = stop - start;
  }
  for (int i = 0; i < r.where_size(); ++i) {
    const v1::TraceCondition& c = r.where(i);
    auto sel = v.dataset->ResolveHeader(c.header());
    if (!sel.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("where[", i, "].header: ",
                                                     sel.status().message()));
    }
    if (!(c.low() <= c.high())) {
      return absl::InvalidArgumentError(absl::StrCat("where[", i, "] (", c.header(), "): low ",
                                                     c.low(), " is above high ", c.high()));
    }
    s.where.push_back({*std::move(sel), c.low(), c.high()});
  }
  if (!v1::Encoding_IsValid(r.encoding())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "encoding: ", static_cast<int>(r.encoding()), " is not a known Encoding (float32, "
        "native, lossless, int16, zfp, auto, quantized)"));
  }
  s.encoding = wire::FromProto(r.encoding());
  if (!(r.tolerance() >= 0) || !std::isfinite(r.tolerance())) {
    return absl::InvalidArgumentError(absl::StrCat("tolerance: ", r.tolerance(),
                                                   " is not a finite value >= 0"));
  }
  s.tolerance = r.tolerance();
  v.queue_depth = queue_depth == 0 ? std::max<uint32_t>(1, limits.default_queue_depth)
                                   : queue_depth;
  s.max_chunk_bytes = r.max_chunk_bytes() == 0
                          ? limits.default_chunk_bytes
                          : std::min<uint64_t>(r.max_chunk_bytes(), limits.max_chunk_bytes);
  s.raw_trace_headers = r.raw_trace_headers();
  s.accept_big_endian = r.accept_big_endian();
  s.accept_trace_gaps = r.accept_trace_gaps();
  return v;
}

}  // namespace shotstream::service
