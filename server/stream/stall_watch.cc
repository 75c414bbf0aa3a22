#include "server/stream/stall_watch.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace shotstream::stream {

StallWatch::StallWatch(absl::Duration timeout, bool run_thread) : timeout_(timeout) {
  if (timeout_ > absl::ZeroDuration() && run_thread) thread_ = std::thread([this] { Run(); });
}

StallWatch::~StallWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void StallWatch::Watch(std::weak_ptr<Stallable> stream) {
  if (timeout_ <= absl::ZeroDuration()) return;
  absl::MutexLock lock(&mu_);
  streams_.push_back(std::move(stream));
}

int StallWatch::CheckNow(absl::Time now) {
  std::vector<std::shared_ptr<Stallable>> alive;
  {
    absl::MutexLock lock(&mu_);
    std::vector<std::weak_ptr<Stallable>> kept;
    for (std::weak_ptr<Stallable>& weak : streams_) {
      if (std::shared_ptr<Stallable> s = weak.lock()) {
        alive.push_back(std::move(s));
        kept.push_back(std::move(weak));
      }
    }
    streams_.swap(kept);
  }
  // Outside the lock: a give-back takes the stream's lock and wakes others.
  int gave_back = 0;
  for (const auto& s : alive) gave_back += s->GiveBackIfStalled(now, timeout_) ? 1 : 0;
  return gave_back;
}

size_t StallWatch::watched() const {
  absl::MutexLock lock(&mu_);
  return streams_.size();
}

void StallWatch::Run() {
  const absl::Duration period = std::max(timeout_ / 4, absl::Milliseconds(10));
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), period)) {
    mu_.Unlock();
    CheckNow(absl::Now());
    mu_.Lock();
  }
}

}  // namespace shotstream::stream
