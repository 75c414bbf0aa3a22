// ByteBudget: the server-wide budget of bytes held by decoded shots (and pieces of shots)
// not yet sent, shared by streams through one Account each.
//
// A stream takes a unit's bytes before reading it and gives them back once the unit is on
// the wire; a unit is a shot, or a piece of a shot larger than the server's piece size
// (ShotWindow). The rules, each checked by byte_budget_test:
// - Progress: a stream that holds nothing always gets its next unit, at once, even over
//   the limit, also when its request was queued while it still held something (it is
//   granted the moment its last bytes come back). So every stream makes progress, however
//   many others wait or stall.
// - Fair share: a stream may hold at most its share, limit / the streams that hold or
//   want bytes, unless it holds nothing (then it gets one unit, whatever its size); a
//   queue depth is a ceiling, not a claim.
// - Order: bytes given back go first to the waiting stream that holds least (then the one
//   that asked first), not to whoever queued first; a new request that would fit still
//   queues behind a waiting stream that holds less and waits only for room.
// Memory stays within limit + (streams x largest unit), and a unit is at most
// max(piece size, one chunk) (8 MiB by default) or a smaller shot whole: the bound does not
// grow with the size of a shot. Only the progress rule exceeds the limit, by at most one
// unit a stream. Stalled streams give their unsent read-ahead back
// (ShotWindow::GiveBackIfStalled), so they hold one unit each, not their queue depth.
// (A shot read in pieces also keeps its head, the header columns and raw headers asked
// for, 8 to 240 bytes a trace, outside the budget.)
//
// Thread-safe. Lock order: a waiter's own lock may be held while calling TryAcquire or
// Cancel; Release and ~Account must be called holding no waiter's lock (they call Wake).
#ifndef SHOTSTREAM_SERVER_STREAM_BYTE_BUDGET_H_
#define SHOTSTREAM_SERVER_STREAM_BYTE_BUDGET_H_

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace shotstream::stream {

class ByteBudget {
 public:
  class Waiter {
   public:
    virtual ~Waiter() = default;
    // Called once per queued request, with no budget lock held, when its bytes have been
    // granted.
    virtual void Wake() = 0;
  };

  // One stream's share of the budget: what it holds, and at most one request waiting.
  // Thread-safe (its state is the budget's, under the budget's lock). Destroying it gives
  // back what it holds and drops its request.
  class Account {
   public:
    ~Account() { budget_->Close(this); }
    Account(const Account&) = delete;
    Account& operator=(const Account&) = delete;

    // Takes `bytes` and returns true, or queues the request and returns false: the bytes
    // are then granted later and the waiter's Wake() says so. REQUIRES: no request queued.
    bool TryAcquire(uint64_t bytes) { return budget_->TryAcquire(this, bytes); }
    // Gives bytes back and grants what the rules allow: this account's own queued request
    // first when it now holds nothing, then the others'.
    void Release(uint64_t bytes) { budget_->Release(this, bytes); }
    // Drops the queued request; false when there was none (already granted, or never).
    bool Cancel() { return budget_->Cancel(this); }
    uint64_t held() const { return budget_->HeldBy(this); }

   private:
    friend class ByteBudget;
    explicit Account(ByteBudget* budget) : budget_(budget) {}
    ByteBudget* const budget_;
  };

  explicit ByteBudget(uint64_t limit) : limit_(limit) {}

  // An account for one stream; `waiter` hears its grants and outlives the account.
  std::unique_ptr<Account> Open(Waiter* waiter) ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t in_use() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t peak() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t limit() const { return limit_; }
  size_t waiting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct State {
    Waiter* waiter = nullptr;
    uint64_t held = 0;
    uint64_t wants = 0;     // the queued request's bytes (0: none)
    uint64_t asked_at = 0;  // when it was queued (a sequence: ties go to the first)
    bool busy() const { return held > 0 || wants > 0; }
  };

  bool TryAcquire(const Account* a, uint64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  void Release(const Account* a, uint64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  bool Cancel(const Account* a) ABSL_LOCKS_EXCLUDED(mu_);
  void Close(const Account* a) ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t HeldBy(const Account* a) const ABSL_LOCKS_EXCLUDED(mu_);

  // Whether `bytes` more keep `s` within its share, limit / busy streams.
  bool WithinShareLocked(const State& s, uint64_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `s` may take `bytes` now, by the rules above.
  bool GrantableLocked(const State& s, uint64_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Changes s's holdings or request, keeping busy_ and in_use_ right.
  void SetLocked(State* s, uint64_t held, uint64_t wants) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Grants the queued requests the rules allow, least held first; the granted waiters go
  // to *wake.
  void GrantLocked(std::vector<Waiter*>* wake) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t limit_;
  mutable absl::Mutex mu_;
  uint64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t asks_ ABSL_GUARDED_BY(mu_) = 0;
  size_t busy_ ABSL_GUARDED_BY(mu_) = 0;  // accounts that hold or want bytes
  absl::flat_hash_map<const Account*, State> accounts_ ABSL_GUARDED_BY(mu_);
  std::set<const Account*> waiting_ ABSL_GUARDED_BY(mu_);  // with a request queued
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_BYTE_BUDGET_H_
