// OpenFileCache: bounds how many files a process holds open at once (each a descriptor
// and, when mapped, a mapping), least recently used closed first, as LevelDB's table
// cache does. A dataset of 100,000 files is served under `ulimit -n 1024`: a file is
// opened when a read needs it and closed when the cache evicts it; a read in progress
// keeps what it uses open until it ends, so the cache's capacity can be passed by the
// reads in flight.
//
// Thread-safe. Lock order: the cache's lock, then a file's own (Close is called under the
// cache's lock; a file never calls the cache while holding its own).
#ifndef SHOTSTREAM_SERVER_IO_OPEN_FILE_CACHE_H_
#define SHOTSTREAM_SERVER_IO_OPEN_FILE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace shotstream::io {

// A file the cache may close: Close() drops its open state (it reopens on next use).
class CachedFile {
 public:
  virtual ~CachedFile() = default;
  virtual void Close() = 0;
};

class OpenFileCache {
 public:
  explicit OpenFileCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The process's cache, which every TraceFile uses unless given another. Its capacity
  // is DefaultCapacity() of the descriptor limit when first used, until SetCapacity.
  static OpenFileCache& Default();
  // Half the soft RLIMIT_NOFILE (the rest for sockets, HDF5 and Zarr files, the catalog),
  // at least 16 and at most 32,768 (each mapping also counts against vm.max_map_count).
  static size_t DefaultCapacity();

  // `f` was just opened: it becomes the most recently used; the least recently used
  // beyond the capacity are closed.
  void Opened(CachedFile* f) ABSL_LOCKS_EXCLUDED(mu_);
  // `f` was used: it becomes the most recently used (nothing when it is not held open).
  void Used(CachedFile* f) ABSL_LOCKS_EXCLUDED(mu_);
  // `f` is going away: the cache forgets it without closing it.
  void Forget(CachedFile* f) ABSL_LOCKS_EXCLUDED(mu_);
  // A new capacity; files beyond it are closed now.
  void SetCapacity(size_t capacity) ABSL_LOCKS_EXCLUDED(mu_);

  size_t capacity() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t open_files() const ABSL_LOCKS_EXCLUDED(mu_);
  // Files opened (first opens and reopens) and closed by eviction, since the start.
  uint64_t opens() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t evictions() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void EvictBeyondCapacity() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  size_t capacity_ ABSL_GUARDED_BY(mu_);
  std::list<CachedFile*> lru_ ABSL_GUARDED_BY(mu_);  // most recently used first
  absl::flat_hash_map<CachedFile*, std::list<CachedFile*>::iterator> where_
      ABSL_GUARDED_BY(mu_);
  uint64_t opens_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shotstream::io

#endif  // SHOTSTREAM_SERVER_IO_OPEN_FILE_CACHE_H_
