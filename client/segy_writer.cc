#include "client/segy_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "segy/segy_writer.h"

namespace shotstream::client {

absl::Status WriteShotSegy(const std::string& path, const Shot& shot,
                           const SegyWriteOptions& options) {
  if (options.format != 1 && options.format != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("SEG-Y output format ", options.format, ": only 1 (IBM) or 5 (IEEE)"));
  }
  if (shot.n_samples > segy::kMaxSegyTraceSamples) {
    return absl::InvalidArgumentError(
        absl::StrCat("shot ", shot.shot_id, " has ", shot.n_samples,
                     " samples per trace; SEG-Y rev 1 holds at most 65535"));
  }
  const std::string head = segy::FileHeader(
      {absl::StrFormat("SHOTSTREAM SHOT %d: %u TRACES OF %u SAMPLES, DT %g US", shot.shot_id,
                       shot.n_traces, shot.n_samples, shot.sample_interval_us)},
      shot.n_samples, shot.sample_interval_us, options.format);
  const bool raw = !shot.trace_headers.empty();
  if (raw && shot.trace_headers.size() != uint64_t{shot.n_traces} * 240) {
    return absl::InvalidArgumentError(absl::StrCat("shot ", shot.shot_id, ": ",
                                                   shot.trace_headers.size(),
                                                   " bytes of trace headers for ",
                                                   shot.n_traces, " traces"));
  }
  auto headers = segy::ShotTraceHeaders::Make(shot.shot_id, shot.n_traces, shot.n_samples,
                                              shot.sample_interval_us, shot.headers);
  if (!headers.ok()) return headers.status();

  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  std::vector<uint8_t> trace(240 + 4ull * shot.n_samples);
  for (uint32_t t = 0; t < shot.n_traces && ok; ++t) {
    if (raw) {
      // The source's trace header, every field as it was (the file's format is said in
      // the binary header alone).
      std::memcpy(trace.data(), shot.trace_headers.data() + uint64_t{t} * 240, 240);
    } else {
      headers->Fill(t, t + 1, trace.data());
    }
    segy::EncodeTraceSamples(shot.samples.data() + uint64_t{t} * shot.n_samples,
                             shot.n_samples, options.format, trace.data() + 240);
    ok = std::fwrite(trace.data(), 1, trace.size(), f) == trace.size();
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace shotstream::client
