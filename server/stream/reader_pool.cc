#include "server/stream/reader_pool.h"

#include <sched.h>

#include <algorithm>

namespace shotstream::stream {

ReaderPool::ReaderPool(int threads) {
  threads = std::max(1, threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

ReaderPool::~ReaderPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void ReaderPool::Submit(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

void ReaderPool::Run() {
  // SCHED_BATCH: a reader woken by a submit does not preempt the thread that submitted it
  // (on a busy core, a stream's writer): a read is work for soon, not for now. The same
  // CPU share as before; unprivileged, best effort.
  sched_param batch{};
  sched_setscheduler(0, SCHED_BATCH, &batch);
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !tasks_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace shotstream::stream
