// ShotFeed: where a window's shots come from when they are not all known at its start
// (a job's consumer: each next shot is handed out as the window has room for it).
//
// Implementations must be thread-safe; they call the wake function set by the window
// (without holding their own locks) when a Next that said kWait may now say otherwise.
#ifndef SHOTSTREAM_SERVER_STREAM_SHOT_FEED_H_
#define SHOTSTREAM_SERVER_STREAM_SHOT_FEED_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"

namespace shotstream::stream {

class ShotFeed {
 public:
  enum class Take { kShot, kWait, kEnd };
  virtual ~ShotFeed() = default;
  // The next shot (kShot, *shot_id set), none yet (kWait: `wake` follows), or none ever.
  virtual Take Next(int64_t* shot_id) = 0;
  // Set once, before the first Next.
  virtual void SetWake(std::function<void()> wake) = 0;
  // Set once, before the first Next: how the feed ends the window early with an error
  // (a job rolled back under its consumer). The default feed never does.
  virtual void SetStop(std::function<void(const absl::Status&)> stop) {}
  // Shots handed out that the window will not send after all (it stalled and gave back
  // its read-ahead): they go back to whoever hands out shots.
  virtual void GiveBack(const std::vector<int64_t>& shot_ids) = 0;
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_SHOT_FEED_H_
