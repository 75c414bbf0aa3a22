#include "server/stream/byte_budget.h"

#include <algorithm>
#include <vector>

namespace shotstream::stream {

bool ByteBudget::TryAcquire(uint64_t bytes, bool holds_nothing, Waiter* waiter) {
  absl::MutexLock lock(&mu_);
  // Waiters already queued go first, except for a stream holding nothing (progress).
  if (holds_nothing || (waiters_.empty() && in_use_ + bytes <= limit_)) {
    in_use_ += bytes;
    peak_ = std::max(peak_, in_use_);
    return true;
  }
  waiters_.push_back({waiter, bytes});
  return false;
}

void ByteBudget::Release(uint64_t bytes) {
  std::vector<Waiter*> wake;
  {
    absl::MutexLock lock(&mu_);
    in_use_ -= std::min(bytes, in_use_);
    while (!waiters_.empty() &&
           (in_use_ + waiters_.front().bytes <= limit_ || in_use_ == 0)) {
      in_use_ += waiters_.front().bytes;
      peak_ = std::max(peak_, in_use_);
      wake.push_back(waiters_.front().waiter);
      waiters_.pop_front();
    }
  }
  for (Waiter* w : wake) w->Wake();
}

bool ByteBudget::Cancel(Waiter* waiter) {
  absl::MutexLock lock(&mu_);
  auto it = std::find_if(waiters_.begin(), waiters_.end(),
                         [waiter](const Request& r) { return r.waiter == waiter; });
  if (it == waiters_.end()) return false;
  waiters_.erase(it);
  return true;
}

uint64_t ByteBudget::in_use() const {
  absl::MutexLock lock(&mu_);
  return in_use_;
}

uint64_t ByteBudget::peak() const {
  absl::MutexLock lock(&mu_);
  return peak_;
}

}  // namespace shotstream::stream
