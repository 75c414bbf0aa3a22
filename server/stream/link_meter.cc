#include "server/stream/link_meter.h"

namespace shotstream::stream {

void LinkMeter::ChunkOut(uint64_t bytes, uint64_t float32_bytes, absl::Time now) {
  chunk_bytes_ = bytes;
  chunk_float32_bytes_ = float32_bytes;
  chunk_since_ = now;
  on_wire_ = true;
}

void LinkMeter::ChunkSent(absl::Time now) {
  if (!on_wire_) return;
  time_ += now - chunk_since_;
  bytes_ += chunk_bytes_;
  float32_bytes_ += chunk_float32_bytes_;
  last_done_ = now;
  on_wire_ = false;
}

void LinkMeter::Report(EncodingAdvisor* advisor, const std::string& peer,
                       const std::string& dataset, wire::Encoding encoding,
                       double tolerance) const {
  if (advisor == nullptr) return;
  advisor->RecordLink(peer, bytes_, absl::ToDoubleSeconds(time_));
  if (ended_ok_ && bytes_ > 0) {  // ran to its end: what its encoding delivered
    advisor->RecordOutcome(peer, dataset, encoding, float32_bytes_,
                           absl::ToDoubleSeconds(last_done_ - started_), tolerance);
  }
}

}  // namespace shotstream::stream
