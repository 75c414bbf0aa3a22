// ShotWindow: one stream's read-ahead window, with no transport in it.
//
// A window reads the shots of a request ahead of the writer in units: a shot, or, for a
// shot of more than the plan's piece_bytes, each piece of it (whole traces, whole chunks:
// Dataset::ReadShotHead, then ReadPiece), so that a gigabyte gather is read, encoded and
// sent a piece at a time, a piece on the wire while the next is read. At most
// `queue_depth` units are held (read, being read, or waiting to be sent), each unit's
// decoded bytes taken from the shared ByteBudget (through the window's own account)
// before its read: a stream's memory is bounded by its units, not by the size of a shot.
// A window whose writer has had a chunk on the wire for longer than the stall timeout
// (its consumer stopped reading) gives back the units it read ahead and has not begun to
// send (GiveBackIfStalled, asked by the plan's StallWatch); they are read again, in order,
// once the consumer reads on. Reads run on the executor, and so does the first touch of shots
// sent from the file mapping (every page brought into memory, from disk if need be). The
// writer pulls chunks in request order with Next(); when Next() said kNotReady, the window
// calls `on_ready` (from the executor) once something changed.
// The window schedules; others do the work: a ShotPipeline reads and encodes each unit on
// the executor, a wire::ChunkWriter frames each chunk with its CRC-32 (a shot's last
// chunk carries the shot's, their join), and a LinkMeter times the writes for
// ENCODING_AUTO. A stored chunk's CRC-32 is taken in Next(), without the window's lock,
// just before the chunk is sent, so that the kernel's copy to the socket finds it in
// cache (docs/server.md).
//
// Thread-safe: Next/Sent are for one writer at a time; Stop and Close may be called from
// any thread. Create() returns shared ownership: the executor's tasks keep the window
// alive, so a window may outlive its writer, and frees what it holds when the last goes.
// The writer must Close() it when done (a window queued in the budget holds itself).
#ifndef SHOTSTREAM_SERVER_STREAM_SHOT_WINDOW_H_
#define SHOTSTREAM_SERVER_STREAM_SHOT_WINDOW_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/stream/byte_budget.h"
#include "server/stream/executor.h"
#include "server/stream/link_meter.h"
#include "server/stream/outgoing_chunk.h"
#include "server/stream/shot_pipeline.h"
#include "server/stream/stall_watch.h"
#include "server/stream/unit_cursor.h"
#include "server/stream/window_counters.h"
#include "server/stream/window_plan.h"
#include "wire/chunk_writer.h"

namespace shotstream::stream {

class ShotWindow final : public ByteBudget::Waiter,
                         public Stallable,
                         public std::enable_shared_from_this<ShotWindow> {
 public:
  enum class Pull { kChunk, kNotReady, kEnd };

  // A window that reads nothing yet. `executor` must outlive every task it is given.
  static std::shared_ptr<ShotWindow> Create(WindowPlan plan, Executor* executor,
                                            std::function<void()> on_ready);
  ~ShotWindow() override;

  // Submits the first reads (on_ready may come from here on). Once.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);

  // The next chunk in request order (kChunk, `*chunk` filled), none yet (kNotReady:
  // on_ready follows), or the end (kEnd, `*end`: OK after the last chunk, a read's error,
  // or what Stop was given). Call Sent() once the returned chunk is off the wire, then
  // Next() again.
  Pull Next(OutgoingChunk* chunk, absl::Status* end) ABSL_LOCKS_EXCLUDED(mu_);
  // The chunk from the last Next() is written: a shot fully written gives its bytes back
  // to the budget, and the window reads ahead again. Written() then Refill().
  void Sent() ABSL_LOCKS_EXCLUDED(mu_);
  // Sent() in two steps, for a writer that starts its next write between them, so that
  // the refill's wake-ups (a reader's, other windows') are not on the stream's path:
  // Written() ends a stall and marks the bytes the write gives back; Refill() gives them
  // back and reads ahead (anywhere after Written(), before or after the next Next()).
  void Written() ABSL_LOCKS_EXCLUDED(mu_);
  void Refill() ABSL_LOCKS_EXCLUDED(mu_);
  // No more reads; Next() answers kEnd with `why`, and on_ready is called so that a
  // writer waiting for a chunk hears it. Once stopped (or ended by an error), later
  // Stops change nothing.
  void Stop(const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);
  // Stops, and returns once on_ready is not running and will not be called again.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  // Shots (whose last chunk went) and sample bytes (as encoded) handed out by Next() so far.
  size_t shots_sent() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t bytes_sent() const ABSL_LOCKS_EXCLUDED(mu_);

  // The ids of stream positions [first, first + count) handed out so far (a feed's as
  // they came; fewer where fewer were handed out).
  std::vector<int64_t> shot_ids(size_t first, size_t count) const ABSL_LOCKS_EXCLUDED(mu_);

  // ByteBudget::Waiter: the bytes of the shot this window waited for are granted.
  void Wake() override ABSL_LOCKS_EXCLUDED(mu_);

  // A stall: when a chunk handed out by Next() has not been Sent() since before
  // `now - timeout`, the window gives back the units behind the one being sent (their
  // bytes to the budget, a job's shots to the job), counts itself stalled, and returns
  // true; the next Sent() ends the stall and the window reads them again. Once per stall.
  bool GiveBackIfStalled(absl::Time now, absl::Duration timeout) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Unit = ShotUnit;
  struct Slot {
    size_t index = 0;
    uint32_t piece = 0;
    bool ready = false;
    absl::StatusOr<dataset::ShotData> shot;
    size_t next_chunk = 0;
    uint64_t budget_bytes = 0;  // taken from the budget for it (0 without a budget)
    uint64_t read = 0;          // which read fills it (a read given back fills nothing)
  };

  ShotWindow(WindowPlan plan, Executor* executor, std::function<void()> on_ready);
  void SubmitReadsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Slot* FindSlotLocked(uint64_t read) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Poke() ABSL_LOCKS_EXCLUDED(mu_);  // the feed may have a shot now
  void SubmitOneLocked(const Unit& unit, uint64_t budget_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HoldLocked(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Read(const Unit& unit, int64_t id, uint64_t read) ABSL_LOCKS_EXCLUDED(mu_);
  void Notify() ABSL_LOCKS_EXCLUDED(mu_);
  void FillChunkLocked(Slot& slot, OutgoingChunk* chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NoCallbackRunning() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return callbacks_running_ == 0;
  }

  const WindowPlan plan_;
  Executor* const executor_;
  const ShotPipeline pipeline_;  // reads and encodes each unit, on the executor
  const std::function<void()> on_ready_;
  WindowCounters* const counters_;
  // This stream's share of the budget (null without one). Its calls that may wake
  // windows (Release, and its destruction) are made without mu_.
  const std::unique_ptr<ByteBudget::Account> account_;

  mutable absl::Mutex mu_;
  UnitCursor cursor_ ABSL_GUARDED_BY(mu_);        // the next unit to read; the shots' order
  std::deque<Slot> window_ ABSL_GUARDED_BY(mu_);  // units, in stream order
  wire::ChunkWriter chunks_ ABSL_GUARDED_BY(mu_);   // frames the chunks handed out
  uint64_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;    // taken from the budget, not given back
  uint64_t release_after_sent_ ABSL_GUARDED_BY(mu_) = 0;  // bytes of a shot on the wire
  uint64_t release_on_refill_ ABSL_GUARDED_BY(mu_) = 0;   // of one written, not yet given
  bool waiting_ ABSL_GUARDED_BY(mu_) = false;             // queued in the byte budget
  Unit waiting_unit_ ABSL_GUARDED_BY(mu_);  // the unit it asked the budget for (its bytes)
  // While waiting_: the window itself, so that the budget's Wake finds it alive.
  std::shared_ptr<ShotWindow> self_while_waiting_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> stopped_ ABSL_GUARDED_BY(mu_);  // why no more reads
  bool closed_ ABSL_GUARDED_BY(mu_) = false;                  // on_ready no more
  int callbacks_running_ ABSL_GUARDED_BY(mu_) = 0;            // on_ready calls now
  uint64_t bytes_sent_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t reads_ ABSL_GUARDED_BY(mu_) = 0;  // reads submitted (each slot's `read`)
  bool stalled_ ABSL_GUARDED_BY(mu_) = false;  // gave back, until the next Sent()
  LinkMeter link_ ABSL_GUARDED_BY(mu_);        // the writes, timed (on_wire: a chunk out)
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_SHOT_WINDOW_H_
