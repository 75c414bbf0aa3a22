#include "server/io/stored_traces.h"

namespace shotstream::io {

void StoredTraces::Keep(absl::Span<const size_t> kept) {
  std::vector<const uint8_t*> traces;
  traces.reserve(kept.size());
  for (size_t i : kept) traces.push_back(traces_[i]);
  traces_ = std::move(traces);
}

}  // namespace shotstream::io
