// PinnedBufferPool: reusable page-locked host buffers for shots (cudaHostAlloc under
// --config=cuda with a GPU; otherwise pageable host memory, advised for transparent huge
// pages from 2 MiB so that a new shot buffer costs a few page faults, not thousands), so
// that a shot lands in memory the GPU can copy from asynchronously and nothing is
// allocated per shot in steady state.
//
// Thread-safe: Acquire and the return of buffers may happen on any thread. The pool must
// outlive every HostBuffer it handed out.
#ifndef SHOTSTREAM_GPU_PINNED_BUFFER_POOL_H_
#define SHOTSTREAM_GPU_PINNED_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace shotstream::gpu {

class PinnedBufferPool;

// A buffer of float32 samples borrowed from a pool; goes back to it when destroyed.
// Move-only. A default-constructed HostBuffer is empty.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { Release(); }

  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }  // floats in use
  size_t capacity_bytes() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  bool pinned() const { return pinned_; }
  float& operator[](size_t i) { return data_[i]; }
  const float& operator[](size_t i) const { return data_[i]; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size_; }

  // Returns the memory to its pool now.
  void Release();

 private:
  friend class PinnedBufferPool;
  PinnedBufferPool* pool_ = nullptr;
  float* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool pinned_ = false;
};

class PinnedBufferPool {
 public:
  struct Options {
    bool pinned = true;          // try page-locked memory (CUDA builds with a GPU)
    size_t max_free_buffers = 16;  // free buffers kept for reuse; more are freed
  };
  struct Stats {
    uint64_t allocations = 0;  // buffers allocated (cudaHostAlloc or aligned_alloc)
    uint64_t reuses = 0;       // Acquire calls served by a free buffer
    uint64_t frees = 0;
    uint64_t bytes_allocated = 0;
    size_t outstanding = 0;    // buffers handed out now
  };

  PinnedBufferPool() : PinnedBufferPool(Options{}) {}
  explicit PinnedBufferPool(Options options);
  ~PinnedBufferPool();
  PinnedBufferPool(const PinnedBufferPool&) = delete;
  PinnedBufferPool& operator=(const PinnedBufferPool&) = delete;

  // A buffer of `n_floats` floats: the smallest free buffer that fits, else a new one
  // (rounded up to 1 MiB so that slightly larger shots reuse it too). Empty (data() null)
  // when memory cannot be had.
  HostBuffer Acquire(size_t n_floats) ABSL_LOCKS_EXCLUDED(mu_);

  // Makes sure `count` free buffers of at least `n_floats` floats wait in the pool (at most
  // max_free_buffers), allocating the missing ones now with their pages first touched: a
  // stream that will hold that many shots calls it once it has its first, so that no later
  // shot waits on the first touch of fresh memory (milliseconds a buffer under a
  // hypervisor). Returns how many buffers it allocated.
  size_t Prefill(size_t n_floats, size_t count) ABSL_LOCKS_EXCLUDED(mu_);
  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether buffers are page-locked (false without CUDA or without a GPU).
  bool pinned() const { return pinned_; }

 private:
  friend class HostBuffer;
  struct Block {
    float* data;
    size_t capacity;
    bool pinned;
  };
  // A new block of at least `bytes` (page-locked where the pool is and CUDA gives it),
  // counted in the stats; data null when memory cannot be had.
  Block NewBlock(size_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  void Return(const Block& block) ABSL_LOCKS_EXCLUDED(mu_);
  void FreeBlock(const Block& b);

  const Options options_;
  const bool pinned_;
  mutable absl::Mutex mu_;
  std::vector<Block> free_ ABSL_GUARDED_BY(mu_);  // reusable buffers
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shotstream::gpu

#endif  // SHOTSTREAM_GPU_PINNED_BUFFER_POOL_H_
