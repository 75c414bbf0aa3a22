#include "shotstream/gpu/pinned_buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "shotstream/gpu/cuda_runtime.h"

#ifdef SHOTSTREAM_CUDA
#include <cuda_runtime_api.h>
#endif

namespace shotstream::gpu {
namespace {

// Pageable host memory for a buffer. Buffers of 2 MiB and more are 2 MiB-aligned and
// advised for transparent huge pages, so that a new 8 MB shot buffer costs 4 page faults
// instead of 2,048 (each fault is dear under a hypervisor) and its writes fewer TLB misses.
void* AllocateHostMemory(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  if (bytes < kHugePage) return std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p != nullptr) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
  return p;
}

constexpr size_t kRoundBytes = 1 << 20;

}  // namespace

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    pool_ = o.pool_;
    data_ = o.data_;
    size_ = o.size_;
    capacity_ = o.capacity_;
    pinned_ = o.pinned_;
    o.pool_ = nullptr;
    o.data_ = nullptr;
    o.size_ = 0;
    o.capacity_ = 0;
  }
  return *this;
}

void HostBuffer::Release() {
  if (pool_ != nullptr && data_ != nullptr) pool_->Return({data_, capacity_, pinned_});
  pool_ = nullptr;
  data_ = nullptr;
  size_ = 0;
  capacity_ = 0;
}

PinnedBufferPool::PinnedBufferPool(Options options)
    : options_(options), pinned_(options.pinned && CudaDeviceAvailable()) {}

PinnedBufferPool::~PinnedBufferPool() {
  absl::MutexLock lock(&mu_);
  for (const Block& b : free_) FreeBlock(b);
}

void PinnedBufferPool::FreeBlock(const Block& b) {
#ifdef SHOTSTREAM_CUDA
  if (b.pinned) {
    cudaFreeHost(b.data);
    return;
  }
#endif
  std::free(b.data);
}

HostBuffer PinnedBufferPool::Acquire(size_t n_floats) {
  const size_t bytes = n_floats * sizeof(float);
  HostBuffer out;
  out.pool_ = this;
  out.size_ = n_floats;
  out.pinned_ = pinned_;
  {
    absl::MutexLock lock(&mu_);
    size_t best = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].capacity >= bytes &&
          (best == free_.size() || free_[i].capacity < free_[best].capacity)) {
        best = i;
      }
    }
    if (best != free_.size()) {
      out.data_ = free_[best].data;
      out.capacity_ = free_[best].capacity;
      out.pinned_ = free_[best].pinned;
      free_.erase(free_.begin() + best);
      ++stats_.reuses;
      ++stats_.outstanding;
      return out;
    }
  }
  const Block block = NewBlock(bytes);
  if (block.data == nullptr) return HostBuffer();
  out.data_ = block.data;
  out.capacity_ = block.capacity;
  out.pinned_ = block.pinned;
  absl::MutexLock lock(&mu_);
  ++stats_.outstanding;
  return out;
}

PinnedBufferPool::Block PinnedBufferPool::NewBlock(size_t bytes) {
  const size_t capacity = std::max(kRoundBytes, (bytes + kRoundBytes - 1) / kRoundBytes * kRoundBytes);
  void* p = nullptr;
  bool pinned = false;
#ifdef SHOTSTREAM_CUDA
  if (pinned_ && cudaHostAlloc(&p, capacity, cudaHostAllocDefault) != cudaSuccess) p = nullptr;
  pinned = p != nullptr;
#endif
  if (p == nullptr) p = AllocateHostMemory(capacity);
  if (p == nullptr) return Block{nullptr, 0, false};
  absl::MutexLock lock(&mu_);
  ++stats_.allocations;
  stats_.bytes_allocated += capacity;
  return Block{static_cast<float*>(p), capacity, pinned};
}

size_t PinnedBufferPool::Prefill(size_t n_floats, size_t count) {
  const size_t bytes = n_floats * sizeof(float);
  size_t missing;
  {
    absl::MutexLock lock(&mu_);
    size_t fitting = 0;
    for (const Block& b : free_) fitting += b.capacity >= bytes;
    const size_t room = options_.max_free_buffers - std::min(free_.size(),
                                                             options_.max_free_buffers);
    missing = std::min(count - std::min(count, fitting), room);
  }
  size_t made = 0;
  for (; made < missing; ++made) {
    const Block block = NewBlock(bytes);
    if (block.data == nullptr) break;
    // One write a page: each page is mapped now (zeroed by the kernel), not during the copy
    // of a later shot into it. Page-locked memory is mapped already.
    if (!block.pinned) {
      volatile uint8_t* p = reinterpret_cast<volatile uint8_t*>(block.data);
      for (size_t off = 0; off < block.capacity; off += 4096) p[off] = 0;
    }
    absl::MutexLock lock(&mu_);
    free_.push_back(block);
  }
  return made;
}

void PinnedBufferPool::Return(const Block& block) {
  Block victim{nullptr, 0, false};
  {
    absl::MutexLock lock(&mu_);
    --stats_.outstanding;
    free_.push_back(block);
    if (free_.size() > options_.max_free_buffers) {
      // Keep the largest buffers: they serve every smaller shot.
      size_t smallest = 0;
      for (size_t i = 1; i < free_.size(); ++i) {
        if (free_[i].capacity < free_[smallest].capacity) smallest = i;
      }
      victim = free_[smallest];
      free_.erase(free_.begin() + smallest);
      ++stats_.frees;
    }
  }
  if (victim.data != nullptr) FreeBlock(victim);
}

PinnedBufferPool::Stats PinnedBufferPool::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace shotstream::gpu
