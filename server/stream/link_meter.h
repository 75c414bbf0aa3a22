// LinkMeter: the link as one stream's writes saw it, for ENCODING_AUTO: sample bytes
// over the time each write was on the wire (from the chunk handed to the writer to its
// Sent), and, for a stream that ran to its end, what its encoding delivered (float32
// bytes from the stream's start to its last write done).
//
// Thread-compatible: its window calls it under the window's lock.
#ifndef SHOTSTREAM_SERVER_STREAM_LINK_METER_H_
#define SHOTSTREAM_SERVER_STREAM_LINK_METER_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "server/stream/encoding_advisor.h"
#include "wire/encoding.h"

namespace shotstream::stream {

class LinkMeter {
 public:
  // The stream's start: its outcome counts its first reads and encodes too.
  void Start(absl::Time now) { started_ = now; }
  // A chunk of `bytes` sample bytes as sent (`float32_bytes` as float32) is handed to the
  // writer at `now`.
  void ChunkOut(uint64_t bytes, uint64_t float32_bytes, absl::Time now);
  // That chunk is off the wire at `now`.
  void ChunkSent(absl::Time now);
  // The writer heard the stream's end with OK.
  void EndedOk() { ended_ok_ = true; }

  // A chunk handed out and not yet sent, and since when.
  bool on_wire() const { return on_wire_; }
  absl::Time chunk_since() const { return chunk_since_; }

  // Tells `advisor` what the stream saw: the link rate its writes saw (under `peer`), and,
  // when it ran to its end, what `encoding` delivered for `dataset`.
  void Report(EncodingAdvisor* advisor, const std::string& peer, const std::string& dataset,
              wire::Encoding encoding, double tolerance) const;

 private:
  uint64_t chunk_bytes_ = 0;
  uint64_t chunk_float32_bytes_ = 0;
  absl::Time chunk_since_;
  bool on_wire_ = false;
  uint64_t bytes_ = 0;          // sample bytes sent, as sent
  uint64_t float32_bytes_ = 0;  // the same as float32
  absl::Duration time_;         // on the wire, summed
  absl::Time started_ = absl::InfinitePast();
  absl::Time last_done_ = absl::InfinitePast();
  bool ended_ok_ = false;
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_LINK_METER_H_
