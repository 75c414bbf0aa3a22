// ChunkCache: decoded Zarr chunks kept for a while, least recently used first out, within a
// byte budget: a chunk that holds traces of several shots (or the headers of many) is
// decoded once while those shots are read in turn. Entries carry the identity of the file
// they were decoded from, so a reader can tell that the file changed since.
//
// Thread-safe: one lock around the index; decoding happens outside it (two readers that
// miss the same chunk at once may both decode it; the second insert wins).
#ifndef SHOTSTREAM_SERVER_ZARR_CHUNK_CACHE_H_
#define SHOTSTREAM_SERVER_ZARR_CHUNK_CACHE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/synchronization/mutex.h"
#include "server/common/file_identity.h"
#include "server/zarr/zarr_codecs.h"

namespace shotstream::zarr {

// One decoded chunk: its elements, and the file (or shard) it came from, if any.
struct ChunkData {
  ChunkBytes bytes;
  std::optional<FileIdentity> file;  // nullopt: the fill value (no file)
};

class ChunkCache {
 public:
  explicit ChunkCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // Key: the array's id and the chunk's linear index in its read grid.
  using Key = std::pair<uint64_t, uint64_t>;

  std::shared_ptr<const ChunkData> Find(const Key& key);
  void Insert(const Key& key, std::shared_ptr<const ChunkData> chunk);
  void Erase(const Key& key);

  uint64_t bytes() const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  struct Entry {
    Key key;
    std::shared_ptr<const ChunkData> chunk;
  };
  const uint64_t max_bytes_;
  mutable absl::Mutex mu_;
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);  // most recent first
  absl::flat_hash_map<Key, std::list<Entry>::iterator> index_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shotstream::zarr

#endif  // SHOTSTREAM_SERVER_ZARR_CHUNK_CACHE_H_
