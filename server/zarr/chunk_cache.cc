#include "server/zarr/chunk_cache.h"

namespace shotstream::zarr {

std::shared_ptr<const ChunkData> ChunkCache::Find(const Key& key) {
  absl::MutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->chunk;
}

void ChunkCache::Insert(const Key& key, std::shared_ptr<const ChunkData> chunk) {
  const uint64_t size = chunk->bytes.size();
  if (size > max_bytes_) return;  // larger than the whole cache: not kept
  absl::MutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it != index_.end()) {
    bytes_ -= it->second->chunk->bytes.size();
    lru_.erase(it->second);
    index_.erase(it);
  }
  lru_.push_front({key, std::move(chunk)});
  index_[key] = lru_.begin();
  bytes_ += size;
  while (bytes_ > max_bytes_ && !lru_.empty()) {
    bytes_ -= lru_.back().chunk->bytes.size();
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

void ChunkCache::Erase(const Key& key) {
  absl::MutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return;
  bytes_ -= it->second->chunk->bytes.size();
  lru_.erase(it->second);
  index_.erase(it);
}

uint64_t ChunkCache::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}
uint64_t ChunkCache::hits() const {
  absl::MutexLock lock(&mu_);
  return hits_;
}
uint64_t ChunkCache::misses() const {
  absl::MutexLock lock(&mu_);
  return misses_;
}

}  // namespace shotstream::zarr
