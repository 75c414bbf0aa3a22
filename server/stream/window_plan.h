// WindowPlan: what one stream reads and how, once its request is validated and planned
// (service/shot_stream_service). The window schedules by it, the pipeline reads and
// encodes by it. A plain value.
#ifndef SHOTSTREAM_SERVER_STREAM_WINDOW_PLAN_H_
#define SHOTSTREAM_SERVER_STREAM_WINDOW_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/dataset/shot_plan.h"
#include "server/stream/byte_budget.h"
#include "server/stream/encoding_advisor.h"
#include "server/stream/shot_feed.h"
#include "server/stream/shot_source.h"
#include "server/stream/stall_watch.h"
#include "server/stream/window_counters.h"

namespace shotstream::stream {

struct WindowPlan {
  std::shared_ptr<const ShotSource> source;
  std::vector<int64_t> shot_ids;  // in the order they are sent
  // Instead of shot_ids: shots taken from the feed as the window has room (a job).
  std::shared_ptr<ShotFeed> feed;
  uint32_t queue_depth = 2;  // >= 1: units (shots, or pieces of a shot) held at once
  // Shots of more float32 bytes than this are read and sent in pieces of about this size
  // (whole chunks, at least one); 0: every shot whole.
  uint64_t piece_bytes = 0;
  // How every shot is read (shot.read, passed unchanged to the source) and encoded
  // (shot.encode: LOSSLESS, INT16, ZFP and QUANTIZED on the executor, a shot's chunks at
  // once, ZFP and QUANTIZED within tolerance x the shot's RMS), decided once per stream.
  dataset::ShotPlan shot;
  // ENCODING_AUTO's measurements, reported to `advisor` (may be null) under `dataset` and
  // `peer` (its address): LOSSLESS, QUANTIZED and INT16 encodes; with shot.encode.probes, the
  // first traces of every kProbeEvery-th shot encoded with each (the result thrown
  // away); when the window closes, the link rate its writes saw (LinkMeter).
  EncodingAdvisor* advisor = nullptr;
  std::string dataset;
  std::string peer;
  // Testing only: flip one sample byte of this shot's first chunk after its checksum was
  // computed (of its first piece, for a shot read in pieces; the shot is decoded, never
  // sent as stored), to test clients' verification.
  std::optional<int64_t> corrupt_shot;
  WindowCounters* counters = nullptr;  // never null
  ByteBudget* budget = nullptr;        // null: no budget
  StallWatch* stall_watch = nullptr;   // watches the window from Start (null: nothing does)
};

inline constexpr size_t kProbeEvery = 16;

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_WINDOW_PLAN_H_
