#include "server/io/stored_traces.h"

#include "common/crc32.h"
#include "common/status_macros.h"

namespace shotstream::io {

absl::Status StoredTraces::Visit(size_t first, size_t n,
                                 absl::FunctionRef<void(size_t, const uint8_t*)> use) const {
  for (size_t i = first; i < first + n; ++i) use(i, traces_[i]);
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> StoredTraces::Crc(size_t first, size_t n, uint32_t crc) const {
  SS_RETURN_IF_ERROR(Visit(first, n, [&](size_t, const uint8_t* samples) {
    crc = Crc32(crc, samples, trace_bytes_);
  }));
  return crc;
}

std::optional<uint32_t> StoredTraces::KeptCrc(size_t, size_t) const { return std::nullopt; }

void StoredTraces::Keep(absl::Span<const size_t> kept) {
  std::vector<const uint8_t*> traces;
  traces.reserve(kept.size());
  for (size_t i : kept) traces.push_back(traces_[i]);
  traces_ = std::move(traces);
}

}  // namespace shotstream::io
