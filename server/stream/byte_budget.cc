#include "server/stream/byte_budget.h"

#include <algorithm>

namespace shotstream::stream {

std::unique_ptr<ByteBudget::Account> ByteBudget::Open(Waiter* waiter) {
  std::unique_ptr<Account> a(new Account(this));
  absl::MutexLock lock(&mu_);
  accounts_[a.get()].waiter = waiter;
  return a;
}

void ByteBudget::SetLocked(State* s, uint64_t held, uint64_t wants) {
  const bool was_busy = s->busy();
  in_use_ = in_use_ - std::min(s->held, in_use_) + held;
  peak_ = std::max(peak_, in_use_);
  s->held = held;
  s->wants = wants;
  if (s->busy() != was_busy) busy_ = s->busy() ? busy_ + 1 : busy_ - 1;
}

bool ByteBudget::WithinShareLocked(const State& s, uint64_t bytes) const {
  // Streams that hold or want bytes share the budget (this one among them). A stream
  // whose one shot is more than its share gets it all the same once it holds nothing.
  return s.held + bytes <= limit_ / std::max<size_t>(busy_, 1);
}

bool ByteBudget::GrantableLocked(const State& s, uint64_t bytes) const {
  if (s.held == 0) return true;  // progress
  return in_use_ + bytes <= limit_ && WithinShareLocked(s, bytes);
}

void ByteBudget::GrantLocked(std::vector<Waiter*>* wake) {
  // Least held first (furthest below its share), then the one that asked first. Each
  // grant changes what is left, so the choice is made afresh after each.
  for (;;) {
    State* best = nullptr;
    const Account* best_account = nullptr;
    for (const Account* a : waiting_) {
      State& s = accounts_[a];
      if (!GrantableLocked(s, s.wants)) continue;
      if (best == nullptr || s.held < best->held ||
          (s.held == best->held && s.asked_at < best->asked_at)) {
        best = &s;
        best_account = a;
      }
    }
    if (best == nullptr) return;
    SetLocked(best, best->held + best->wants, 0);
    waiting_.erase(best_account);
    wake->push_back(best->waiter);
  }
}

bool ByteBudget::TryAcquire(const Account* a, uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  State& s = accounts_[a];
  // Every queued request is one the rules refuse now (each call grants what they allow),
  // but one that holds less than this stream and is within its share waits only for room:
  // it goes first, so this one queues behind it.
  bool behind = false;
  for (const Account* w : waiting_) {
    const State& other = accounts_[w];
    behind |= other.held < s.held && WithinShareLocked(other, other.wants);
  }
  if (s.held == 0 || (!behind && GrantableLocked(s, bytes))) {
    SetLocked(&s, s.held + bytes, 0);
    return true;
  }
  SetLocked(&s, s.held, bytes);
  s.asked_at = asks_++;
  waiting_.insert(a);
  return false;
}

void ByteBudget::Release(const Account* a, uint64_t bytes) {
  std::vector<Waiter*> wake;
  {
    absl::MutexLock lock(&mu_);
    State& s = accounts_[a];
    SetLocked(&s, s.held - std::min(bytes, s.held), s.wants);
    GrantLocked(&wake);  // this one's own request first when it now holds nothing
  }
  for (Waiter* w : wake) w->Wake();
}

bool ByteBudget::Cancel(const Account* a) {
  absl::MutexLock lock(&mu_);
  if (waiting_.erase(a) == 0) return false;
  State& s = accounts_[a];
  SetLocked(&s, s.held, 0);
  return true;
}

void ByteBudget::Close(const Account* a) {
  std::vector<Waiter*> wake;
  {
    absl::MutexLock lock(&mu_);
    State& s = accounts_[a];
    SetLocked(&s, 0, 0);
    accounts_.erase(a);
    waiting_.erase(a);
    GrantLocked(&wake);
  }
  for (Waiter* w : wake) w->Wake();
}

uint64_t ByteBudget::HeldBy(const Account* a) const {
  absl::MutexLock lock(&mu_);
  auto it = accounts_.find(a);
  return it == accounts_.end() ? 0 : it->second.held;
}

uint64_t ByteBudget::in_use() const {
  absl::MutexLock lock(&mu_);
  return in_use_;
}

uint64_t ByteBudget::peak() const {
  absl::MutexLock lock(&mu_);
  return peak_;
}

size_t ByteBudget::waiting() const {
  absl::MutexLock lock(&mu_);
  return waiting_.size();
}

}  // namespace shotstream::stream
