// StallWatch: finds the streams whose consumer stopped reading and has them give back what
// they read ahead, so that a hung worker holds one shot of the byte budget, not its queue
// depth (docs/operations.md, "Slow and stalled consumers").
//
// A thread asks every watched stream, every timeout / 4, whether a chunk of it has been on
// the wire for the timeout (Stallable::GiveBackIfStalled). Watched streams are held weakly:
// a stream that ends is forgotten at the next scan. Thread-safe.
#ifndef SHOTSTREAM_SERVER_STREAM_STALL_WATCH_H_
#define SHOTSTREAM_SERVER_STREAM_STALL_WATCH_H_

#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shotstream::stream {

class Stallable {
 public:
  virtual ~Stallable() = default;
  // Gives back the read-ahead when nothing was taken off the wire since `now - timeout`;
  // true when it did (once per stall).
  virtual bool GiveBackIfStalled(absl::Time now, absl::Duration timeout) = 0;
};

class StallWatch {
 public:
  // timeout 0: off (Watch keeps nothing). With `run_thread` false nothing scans but
  // CheckNow (tests).
  explicit StallWatch(absl::Duration timeout, bool run_thread = true);
  ~StallWatch();  // stops the thread
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  absl::Duration timeout() const { return timeout_; }
  void Watch(std::weak_ptr<Stallable> stream) ABSL_LOCKS_EXCLUDED(mu_);
  // One scan as of `now`: the streams that gave back. Forgets the streams that ended.
  int CheckNow(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  size_t watched() const ABSL_LOCKS_EXCLUDED(mu_);  // streams not yet forgotten

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Duration timeout_;
  mutable absl::Mutex mu_;
  std::vector<std::weak_ptr<Stallable>> streams_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started once the rest is set
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_STALL_WATCH_H_
