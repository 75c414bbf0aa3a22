// UnitCursor: a stream's order of units: its shots in stream order (a request's ids, or a
// feed's as the window takes them), each a unit, or, for a shot of more than the plan's
// piece_bytes, a unit for each piece once its first piece told the shot's head. The
// window asks it for the next unit to read, moves it on as it submits reads, and moves it
// back when a stall gives units back.
//
// Thread-compatible: its window calls it under the window's lock.
#ifndef SHOTSTREAM_SERVER_STREAM_UNIT_CURSOR_H_
#define SHOTSTREAM_SERVER_STREAM_UNIT_CURSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "server/stream/shot_pipeline.h"
#include "server/stream/window_plan.h"

namespace shotstream::stream {

class UnitCursor {
 public:
  // `plan` must outlive it.
  explicit UnitCursor(const WindowPlan* plan) : plan_(*plan), ids_(plan->shot_ids) {}

  // The unit at the cursor (false: none yet, as when a shot's later pieces wait for its
  // head or a feed has no shot now, or none ever). Takes a shot from the feed if need be.
  bool Peek(ShotUnit* unit);
  // `unit`, the one Peek gave, is submitted: the cursor moves to the shot's next piece,
  // or to the next shot.
  void Advance(const ShotUnit& unit);
  // The first piece of the shot at `index` was read: its later pieces can be.
  void HeadRead(size_t index, std::shared_ptr<const dataset::ShotHead> head);
  // The shot at `index` went out to its last chunk.
  void ShotSent(size_t index);
  // A stall: the cursor goes back to unit (index, piece), given back (called for each
  // unit given back, the last call the first unit); then Rewind.
  void MoveTo(size_t index, uint32_t piece) {
    next_ = index;
    piece_ = piece;
  }
  // After a stall's MoveTo: a shot whose first piece went back is read again from its
  // head, and a feed's shots from the cursor on (but a shot partly sent) leave the stream
  // and are returned, for the feed to take back.
  std::vector<int64_t> Rewind();

  int64_t id(size_t index) const { return ids_[index]; }
  size_t shots_sent() const { return shots_sent_; }
  // Every shot of the stream is known (not a feed, or the feed ended).
  bool all_known() const { return plan_.feed == nullptr || feed_ended_; }
  // Every shot known went out.
  bool all_sent() const { return all_known() && shots_sent_ >= ids_.size(); }
  // The ids of stream positions [first, first + count) known so far.
  std::vector<int64_t> ids(size_t first, size_t count) const;

 private:
  // Whether there is a shot at next_ (asking the feed for one).
  bool HaveShot();

  const WindowPlan& plan_;
  std::vector<int64_t> ids_;  // the shots, in stream order
  bool feed_ended_ = false;
  size_t shots_sent_ = 0;  // shots whose last chunk was handed out
  // The next unit to read is piece piece_ of the shot at next_.
  size_t next_ = 0;
  uint32_t piece_ = 0;
  // The heads of shots read in pieces (by stream position), once their first piece is read.
  absl::flat_hash_map<size_t, std::shared_ptr<const dataset::ShotHead>> heads_;
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_UNIT_CURSOR_H_
