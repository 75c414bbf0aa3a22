// One Zarr array in a local directory, v2 (.zarray, .zattrs) or v3 (zarr.json): its
// metadata, and its chunks read and decoded one at a time (the codec chain of
// zarr_codecs.h; for a sharded v3 array, one inner chunk located through its shard's
// index). What a read decodes is the read chunk: the chunk, or the inner chunk of a shard.
//
// Thread-safe after Open: chunks are read through an env::Env (the process's POSIX one
// unless given another) from files opened per read; the
// first-seen identity of every chunk file read is kept under a lock, so that a chunk
// rewritten under the server is found (CheckUnchanged then says so until the array is
// opened again).
#ifndef SHOTSTREAM_SERVER_ZARR_ZARR_ARRAY_H_
#define SHOTSTREAM_SERVER_ZARR_ZARR_ARRAY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "server/common/file_identity.h"
#include "server/env/env.h"
#include "server/io/coalescing_reader.h"
#include "server/zarr/chunk_cache.h"
#include "server/zarr/zarr_codecs.h"

namespace shotstream::zarr {

class ZarrArray {
 public:
  // Opens the array whose metadata is in directory `dir`. FAILED_PRECONDITION naming the
  // metadata file and the field for what cannot be read (an unknown codec, data type,
  // chunk grid or key encoding); NOT_FOUND when `dir` holds no array. Its files are read
  // through `env` (the process's POSIX Env when null), which outlives the array.
  static absl::StatusOr<std::unique_ptr<ZarrArray>> Open(const std::string& dir,
                                                         env::Env* env = nullptr);

  const std::string& dir() const { return dir_; }
  int zarr_format() const { return zarr_format_; }
  const std::vector<uint64_t>& shape() const { return shape_; }
  // The unit a read decodes (the inner chunk of a sharded array).
  const std::vector<uint64_t>& read_chunk() const { return read_chunk_; }
  const DataType& dtype() const { return dtype_; }
  // Names of the dimensions (v3 dimension_names, v2 xarray's _ARRAY_DIMENSIONS); empty
  // where the store gives none.
  const std::vector<std::string>& dimension_names() const { return dimension_names_; }
  // The array's attributes as JSON text ("{}" without).
  const std::string& attributes() const { return attributes_; }
  // "v3 float32, chunks [4, 8, 64], bytes + blosc(lz4, shuffle)": for operators.
  std::string Describe() const;

  // The decoded read chunk at `coords` (in units of read_chunk()): every element of it,
  // C order, little-endian; the fill value where the store has no such chunk. Through
  // `cache` (may be null); a chunk read from disk counts one read in `stats`.
  absl::StatusOr<std::shared_ptr<const ChunkData>> Chunk(absl::Span<const uint64_t> coords,
                                                         ChunkCache* cache,
                                                         io::ReadStats* stats) const;

  // Every element, C order, little-endian (coordinates, masks, header arrays).
  absl::StatusOr<std::vector<uint8_t>> ReadAll() const;

  // OK while the metadata files are those opened and no chunk file read was found changed;
  // DATA_LOSS naming what changed otherwise.
  absl::Status CheckUnchanged() const;

 private:
  explicit ZarrArray(env::Env* env) : env_(env) {}
  absl::Status Load();
  // The path of the stored chunk (or shard) at `coords` of the stored grid.
  std::string KeyPath(absl::Span<const uint64_t> coords) const;
  absl::StatusOr<std::shared_ptr<const ChunkData>> Decode(absl::Span<const uint64_t> coords,
                                                          io::ReadStats* stats) const;
  std::shared_ptr<const ChunkData> Filled() const;

  env::Env* const env_;
  std::string dir_;
  int zarr_format_ = 2;
  std::vector<uint64_t> shape_;
  std::vector<uint64_t> chunk_;       // the stored chunk (a shard, for sharded arrays)
  std::vector<uint64_t> read_chunk_;  // what one read decodes
  DataType dtype_;
  std::vector<uint8_t> fill_;         // one element, little-endian
  std::vector<Codec> codecs_;         // the read chunk's chain, in encoding order
  // Sharded arrays: the shard index's chain and place.
  bool sharded_ = false;
  std::vector<Codec> index_codecs_;
  bool index_at_start_ = false;
  std::string separator_ = ".";
  bool default_keys_ = false;  // v3 "default" keys: c/0/1/2
  std::vector<std::string> dimension_names_;
  std::string attributes_ = "{}";
  std::vector<std::pair<std::string, FileIdentity>> metadata_;  // files and identities
  uint64_t id_ = 0;  // this array's key in a chunk cache

  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<std::string, FileIdentity> seen_ ABSL_GUARDED_BY(mu_);
  mutable std::string changed_ ABSL_GUARDED_BY(mu_);  // what was found changed
};

// Whether `dir` holds a Zarr array or group (.zarray, .zgroup or zarr.json).
bool IsZarrNode(const std::string& dir, env::Env* env = nullptr);

}  // namespace shotstream::zarr

#endif  // SHOTSTREAM_SERVER_ZARR_ZARR_ARRAY_H_
