// TSan builds only (--config=tsan). Debian's Abseil is not compiled with TSan, so the
// happens-before edges of absl::Mutex are invisible to it and every mutex-guarded field
// looks racy. The linker routes our calls to the Mutex members through these wrappers
// (-Wl,--wrap=SYMBOL, see BUILD.bazel), which annotate them with TSan's mutex interface
// as an instrumented Abseil does: lock, unlock, and Await as an unlock then a lock.
// Memory accesses between a pre_ and its post_ annotation are ignored, which covers the
// conditions that Abseil evaluates for waiters inside Unlock and Await.
// The symbols are Debian's Abseil 20220623 (inline namespace debian3).
#include <sanitizer/tsan_interface.h>

#include <cstdint>

namespace {
struct Duration {  // absl::Duration's layout: passed by value in two registers
  int64_t rep_hi;
  uint32_t rep_lo;
};

// Before an operation that returns with the mutex held after having released it.
void PreRelock(void* mu) { __tsan_mutex_pre_unlock(mu, 0); }
void PostRelock(void* mu) {
  __tsan_mutex_post_unlock(mu, 0);
  __tsan_mutex_pre_lock(mu, 0);
  __tsan_mutex_post_lock(mu, 0, 0);
}
}  // namespace

extern "C" {
void __real__ZN4absl7debian35MutexD1Ev(void* mu);
void __real__ZN4absl7debian35Mutex4LockEv(void* mu);
void __real__ZN4absl7debian35Mutex6UnlockEv(void* mu);
bool __real__ZN4absl7debian35Mutex7TryLockEv(void* mu);
void __real__ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE(void* mu, const void* cond);
bool __real__ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE(
    void* mu, const void* cond, Duration timeout);
void __real__ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE(void* mu, const void* cond);

void __wrap__ZN4absl7debian35MutexD1Ev(void* mu) {
  __real__ZN4absl7debian35MutexD1Ev(mu);
  __tsan_mutex_destroy(mu, 0);
}
void __wrap__ZN4absl7debian35Mutex4LockEv(void* mu) {
  __tsan_mutex_pre_lock(mu, 0);
  __real__ZN4absl7debian35Mutex4LockEv(mu);
  __tsan_mutex_post_lock(mu, 0, 0);
}
void __wrap__ZN4absl7debian35Mutex6UnlockEv(void* mu) {
  __tsan_mutex_pre_unlock(mu, 0);
  __real__ZN4absl7debian35Mutex6UnlockEv(mu);
  __tsan_mutex_post_unlock(mu, 0);
}
bool __wrap__ZN4absl7debian35Mutex7TryLockEv(void* mu) {
  __tsan_mutex_pre_lock(mu, __tsan_mutex_try_lock);
  const bool locked = __real__ZN4absl7debian35Mutex7TryLockEv(mu);
  __tsan_mutex_post_lock(
      mu, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}
void __wrap__ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE(void* mu, const void* cond) {
  PreRelock(mu);
  __real__ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE(mu, cond);
  PostRelock(mu);
}
bool __wrap__ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE(
    void* mu, const void* cond, Duration timeout) {
  PreRelock(mu);
  const bool met =
      __real__ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE(
          mu, cond, timeout);
  PostRelock(mu);
  return met;
}
void __wrap__ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE(void* mu, const void* cond) {
  __tsan_mutex_pre_lock(mu, 0);
  __real__ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE(mu, cond);
  __tsan_mutex_post_lock(mu, 0, 0);
}
}  // extern "C"
