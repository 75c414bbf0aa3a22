#include "server/stream/spread.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace shotstream::stream {
namespace {

// Shared by the caller and its helpers; a helper may outlive the call (it then claims
// nothing and never touches `fn`).
struct Steps {
  Steps(size_t n, const std::function<void(size_t)>* fn) : n(n), fn(fn) {}
  const size_t n;
  const std::function<void(size_t)>* const fn;  // valid while a step is unfinished
  std::atomic<size_t> next{0};
  absl::Mutex mu;
  size_t done ABSL_GUARDED_BY(mu) = 0;

  void Work() ABSL_LOCKS_EXCLUDED(mu) {
    size_t did = 0;
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      (*fn)(i);
      ++did;
    }
    if (did == 0) return;
    absl::MutexLock lock(&mu);
    done += did;
  }
};

}  // namespace

void Spread(Executor* executor, size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  const size_t helpers =
      executor == nullptr ? 0 : std::min<size_t>(n - 1, std::max(executor->parallelism(), 1) - 1);
  if (helpers == 0) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  auto steps = std::make_shared<Steps>(n, &fn);
  for (size_t h = 0; h < helpers; ++h) executor->Submit([steps] { steps->Work(); });
  steps->Work();
  Steps* s = steps.get();
  absl::MutexLock lock(&s->mu);
  s->mu.Await(absl::Condition(
      +[](Steps* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) { return s->done == s->n; }, s));
}

}  // namespace shotstream::stream
