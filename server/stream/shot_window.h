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
// Every chunk carries its own CRC-32 (ShotChunk.chunk_crc32), and a shot's last chunk the
// shot's (their join). Next() takes a stored chunk's CRC-32 on the writer's thread, just
// before the chunk is sent, so that the kernel's copy to the socket finds it in cache
// (docs/server.md).
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
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/sample_buffer.h"
#include "server/stream/byte_budget.h"
#include "server/stream/encoding_advisor.h"
#include "server/stream/executor.h"
#include "server/stream/shot_feed.h"
#include "server/stream/shot_source.h"
#include "server/stream/stall_watch.h"
#include "server/stream/window_counters.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::stream {

// What one stream reads: a validated request, planned.
struct WindowPlan {
  std::shared_ptr<const ShotSource> source;
  std::vector<int64_t> shot_ids;  // in the order they are sent
  // Instead of shot_ids: shots taken from the feed as the window has room (a job).
  std::shared_ptr<ShotFeed> feed;
  uint32_t queue_depth = 2;  // >= 1: units (shots, or pieces of a shot) held at once
  // Shots of more float32 bytes than this are read and sent in pieces of about this size
  // (whole chunks, at least one); 0: every shot whole.
  uint64_t piece_bytes = 0;
  // How every shot is read and encoded (decided once per stream, passed unchanged to the
  // source): LOSSLESS, INT16, ZFP and QUANTIZED are encoded on the executor, a shot's
  // chunks at once (ZFP and QUANTIZED within tolerance x the shot's RMS).
  dataset::ShotPlan shot;
  // ENCODING_AUTO's measurements, reported to `advisor` (may be null) under `dataset` and
  // `peer` (its address): LOSSLESS, QUANTIZED and INT16 encodes; with shot.probes, the
  // first traces of every kProbeEvery-th shot encoded with each (the result thrown
  // away); when the window closes, the link rate its writes saw (sample
  // bytes over the time a write was on the wire, Next to Sent), and, for a stream that
  // ran to its end, what its encoding delivered (float32 bytes from Start to the last
  // Sent).
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

// One chunk to encode: `meta` is a ShotChunk without samples; the samples are either
// decoded (`samples`) or stored traces (`stored`, `trace_bytes` each, in file mappings
// that `stored_set` holds open, as the message's slices do until written: traces
// [stored_first, + stored.size()) of `stored_set`).
struct OutgoingChunk {
  v1::ShotChunk meta;
  SampleBuffer samples;
  std::vector<const uint8_t*> stored;
  size_t trace_bytes = 0;
  std::shared_ptr<const io::StoredTraces> stored_set;
  size_t stored_first = 0;
  uint64_t sample_bytes() const {
    return stored.empty() ? samples.size() : uint64_t{trace_bytes} * stored.size();
  }
};

inline constexpr size_t kProbeEvery = 16;

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
  // to the budget, and the window reads ahead again.
  void Sent() ABSL_LOCKS_EXCLUDED(mu_);
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
  // What one read fills: a shot (piece 0, not pieced), or piece `piece` of a shot read in
  // pieces (piece 0 reads the shot's head too; later pieces are read with it).
  struct Unit {
    size_t index = 0;  // the shot's position in the stream
    uint32_t piece = 0;
    bool pieced = false;
    uint64_t bytes = 0;  // float32 bytes it holds, at most (what the budget is asked for)
    std::shared_ptr<const dataset::ShotHead> head;  // pieces after the first
  };
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
  // Whether there is a shot to submit at next_submit_ (asking the feed for one).
  bool HaveNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next unit to read, at the cursor (false: none yet, as when a shot's later pieces
  // wait for its head, or none ever).
  bool NextUnitLocked(Unit* unit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Slot* FindSlotLocked(uint64_t read) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AllKnownLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return plan_.feed == nullptr || feed_ended_;
  }
  void Poke() ABSL_LOCKS_EXCLUDED(mu_);  // the feed may have a shot now
  void SubmitOneLocked(const Unit& unit, uint64_t budget_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HoldLocked(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Read(const Unit& unit, int64_t id, uint64_t read) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<dataset::ShotData> ReadUnit(const Unit& unit, int64_t id) const;
  absl::Status Encode(const Unit& unit, dataset::ShotData* shot) const;
  void Notify() ABSL_LOCKS_EXCLUDED(mu_);
  void FillChunkLocked(Slot& slot, OutgoingChunk* chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NoCallbackRunning() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return callbacks_running_ == 0;
  }

  const WindowPlan plan_;
  Executor* const executor_;
  const std::function<void()> on_ready_;
  WindowCounters* const counters_;
  // This stream's share of the budget (null without one). Its calls that may wake
  // windows (Release, and its destruction) are made without mu_.
  const std::unique_ptr<ByteBudget::Account> account_;

  mutable absl::Mutex mu_;
  std::vector<int64_t> ids_ ABSL_GUARDED_BY(mu_);  // the shots, in stream order
  bool feed_ended_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Slot> window_ ABSL_GUARDED_BY(mu_);  // units, in stream order
  size_t shots_done_ ABSL_GUARDED_BY(mu_) = 0;    // shots whose last chunk was handed out
  // The cursor: the next unit to read is piece next_piece_ of the shot at next_submit_.
  size_t next_submit_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t next_piece_ ABSL_GUARDED_BY(mu_) = 0;
  // The heads of shots read in pieces (by stream position), once their first piece is read.
  absl::flat_hash_map<size_t, std::shared_ptr<const dataset::ShotHead>> heads_
      ABSL_GUARDED_BY(mu_);
  uint64_t chunk_trace_ ABSL_GUARDED_BY(mu_) = 0;  // first trace of the next chunk, front shot
  uint32_t shot_crc_ ABSL_GUARDED_BY(mu_) = 0;      // of the front shot's chunks so far
  uint64_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;    // taken from the budget, not given back
  uint64_t release_after_sent_ ABSL_GUARDED_BY(mu_) = 0;  // bytes of a shot on the wire
  bool waiting_ ABSL_GUARDED_BY(mu_) = false;             // queued in the byte budget
  Unit waiting_unit_ ABSL_GUARDED_BY(mu_);  // the unit it asked the budget for (its bytes)
  // While waiting_: the window itself, so that the budget's Wake finds it alive.
  std::shared_ptr<ShotWindow> self_while_waiting_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> stopped_ ABSL_GUARDED_BY(mu_);  // why no more reads
  bool closed_ ABSL_GUARDED_BY(mu_) = false;                  // on_ready no more
  int callbacks_running_ ABSL_GUARDED_BY(mu_) = 0;            // on_ready calls now
  uint64_t bytes_sent_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t reads_ ABSL_GUARDED_BY(mu_) = 0;  // reads submitted (each slot's `read`)
  bool on_wire_ ABSL_GUARDED_BY(mu_) = false;  // a chunk from Next() not yet Sent()
  bool stalled_ ABSL_GUARDED_BY(mu_) = false;  // gave back, until the next Sent()
  // The link as the writes saw it (for the advisor): the chunk on the wire (its sample
  // bytes as sent and as float32, since when), and the sums over the stream.
  struct Wire {
    uint64_t chunk_bytes = 0;
    uint64_t chunk_float32_bytes = 0;
    absl::Time chunk_since;
    uint64_t bytes = 0;
    uint64_t float32_bytes = 0;
    absl::Duration time;
    absl::Time started = absl::InfinitePast();  // Start(): the outcome counts the stream's
                                                // first reads and encodes too
    absl::Time last_done = absl::InfinitePast();
    bool ended_ok = false;  // the writer heard the end with OK
  } wire_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_SHOT_WINDOW_H_
