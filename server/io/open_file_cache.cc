#include "server/io/open_file_cache.h"

#include <sys/resource.h>

#include <algorithm>

namespace shotstream::io {

OpenFileCache& OpenFileCache::Default() {
  static OpenFileCache* cache = new OpenFileCache(DefaultCapacity());
  return *cache;
}

size_t OpenFileCache::DefaultCapacity() {
  struct rlimit rl;
  uint64_t limit = 1024;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) limit = rl.rlim_cur;
  return static_cast<size_t>(std::clamp<uint64_t>(limit / 2, 16, 32768));
}

void OpenFileCache::Opened(CachedFile* f) {
  absl::MutexLock lock(&mu_);
  ++opens_;
  auto it = where_.find(f);
  if (it != where_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
  } else {
    lru_.push_front(f);
    where_.emplace(f, lru_.begin());
  }
  EvictBeyondCapacity();
}

void OpenFileCache::Used(CachedFile* f) {
  absl::MutexLock lock(&mu_);
  auto it = where_.find(f);
  if (it != where_.end() && it->second != lru_.begin()) {
    lru_.splice(lru_.begin(), lru_, it->second);
  }
}

void OpenFileCache::Forget(CachedFile* f) {
  absl::MutexLock lock(&mu_);
  auto it = where_.find(f);
  if (it == where_.end()) return;
  lru_.erase(it->second);
  where_.erase(it);
}

void OpenFileCache::SetCapacity(size_t capacity) {
  absl::MutexLock lock(&mu_);
  capacity_ = std::max<size_t>(1, capacity);
  EvictBeyondCapacity();
}

void OpenFileCache::EvictBeyondCapacity() {
  while (lru_.size() > capacity_) {
    CachedFile* victim = lru_.back();
    lru_.pop_back();
    where_.erase(victim);
    ++evictions_;
    victim->Close();
  }
}

size_t OpenFileCache::capacity() const {
  absl::MutexLock lock(&mu_);
  return capacity_;
}

size_t OpenFileCache::open_files() const {
  absl::MutexLock lock(&mu_);
  return lru_.size();
}

uint64_t OpenFileCache::opens() const {
  absl::MutexLock lock(&mu_);
  return opens_;
}

uint64_t OpenFileCache::evictions() const {
  absl::MutexLock lock(&mu_);
  return evictions_;
}

}  // namespace shotstream::io
