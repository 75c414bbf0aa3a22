// ByteBudget: the server-wide budget of bytes held by decoded shots not yet sent.
//
// A stream takes a shot's bytes before reading it and gives them back once the shot is on
// the wire. A stream that holds nothing always gets its next shot, so every stream makes
// progress; the others wait in one FIFO queue, so that freed bytes go round robin between
// waiting streams. Memory stays within limit + (streams x largest shot).
//
// Thread-safe. Lock order: a waiter's own lock may be held while calling TryAcquire or
// Cancel; Release must be called holding no waiter's lock (it calls Wake).
#ifndef SHOTSTREAM_SERVER_STREAM_BYTE_BUDGET_H_
#define SHOTSTREAM_SERVER_STREAM_BYTE_BUDGET_H_

#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace shotstream::stream {

class ByteBudget {
 public:
  class Waiter {
   public:
    virtual ~Waiter() = default;
    // Called once, with no budget lock held, when the bytes the waiter asked for have
    // been granted to it.
    virtual void Wake() = 0;
  };

  explicit ByteBudget(uint64_t limit) : limit_(limit) {}

  // Takes `bytes` and returns true, or queues `waiter` and returns false: the bytes are
  // then granted later and `waiter->Wake()` says so. `holds_nothing`: the caller holds no
  // bytes now (then it always succeeds).
  bool TryAcquire(uint64_t bytes, bool holds_nothing, Waiter* waiter) ABSL_LOCKS_EXCLUDED(mu_);

  // Gives bytes back, and grants queued requests in FIFO order while they fit (the front
  // one also when nothing else is in use).
  void Release(uint64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes a queued waiter; false when it was not queued (already granted, or never).
  bool Cancel(Waiter* waiter) ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t in_use() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t peak() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  mutable absl::Mutex mu_;
  uint64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
  struct Request {
    Waiter* waiter;
    uint64_t bytes;
  };
  std::deque<Request> waiters_ ABSL_GUARDED_BY(mu_);  // FIFO: round robin between streams
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_BYTE_BUDGET_H_
