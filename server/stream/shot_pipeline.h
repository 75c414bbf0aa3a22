// ShotPipeline: reads and encodes one unit of a stream, on the executor: a shot, or a
// piece of a shot read in pieces (its first piece reads the shot's head too). A stored
// shot's pages are touched here (their first read from disk, if need be), and a decoded
// shot is encoded here (EncodeShot), so the writer finds each unit ready to frame. It
// counts each read's latency and cost, and feeds ENCODING_AUTO's advisor its probes.
//
// Thread-safe: Read is const, and any number run at once.
#ifndef SHOTSTREAM_SERVER_STREAM_SHOT_PIPELINE_H_
#define SHOTSTREAM_SERVER_STREAM_SHOT_PIPELINE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/dataset/shot_data.h"
#include "server/stream/executor.h"
#include "server/stream/window_plan.h"

namespace shotstream::stream {

// What one read fills: a shot (piece 0, not pieced), or piece `piece` of a shot read in
// pieces (piece 0 reads the shot's head too; later pieces are read with it).
struct ShotUnit {
  size_t index = 0;  // the shot's position in the stream
  uint32_t piece = 0;
  bool pieced = false;
  uint64_t bytes = 0;  // float32 bytes it holds, at most (what the budget is asked for)
  std::shared_ptr<const dataset::ShotHead> head;  // pieces after the first
};

class ShotPipeline {
 public:
  // `plan` and `executor` (which runs a shot's chunk encodes too) must outlive it.
  ShotPipeline(const WindowPlan* plan, Executor* executor) : plan_(*plan), executor_(executor) {}

  // Unit `unit` of shot `id`, read and encoded: a ShotData whose chunks (and their
  // CRC-32s) are ready to frame, or stored traces touched, or the read's error.
  absl::StatusOr<dataset::ShotData> Read(const ShotUnit& unit, int64_t id) const;

 private:
  absl::StatusOr<dataset::ShotData> ReadSource(const ShotUnit& unit, int64_t id,
                                               const dataset::ReadPlan& plan,
                                               ShotReadCost* cost) const;
  absl::Status Encode(const ShotUnit& unit, dataset::ShotData* shot) const;
  // A stored shot's chunk_crc32 where every trace's CRC-32 is kept (joined: no byte is
  // read), so that the writer, whose turns a stream's sends wait on, only frames them.
  // Else none: the window reads them just before each write, the pages then in cache for
  // the kernel's copy.
  static void JoinKeptCrcs(dataset::ShotData* shot);
  // ENCODING_AUTO's probes: the first traces of the shot encoded with each candidate.
  void Probe(const dataset::ShotData& shot) const;

  const WindowPlan& plan_;
  Executor* const executor_;
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_SHOT_PIPELINE_H_
