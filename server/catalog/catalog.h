// Catalog: shot id -> the shot's traces (file id, position in the file: a byte offset for
// files of fixed-length traces, a trace index for arrays), built once by a source (a scan
// of SEG-Y trace headers, an array's shape or header column) so that requests never parse
// headers. A shot's traces are in the order they were added (file order for every source).
//
// Compact: a shot's traces are held as segments, each within one file: a run of
// consecutive traces (file, first trace, count: the common case of shot-ordered files, a
// few bytes per *shot*), or a list of 32-bit trace indices (traces of a shot scattered
// among others: 4 bytes per trace). Byte offsets come from each file's geometry (first
// trace offset + index x trace bytes). docs/server.md gives the memory it costs.
//
// Thread-safe once built: all accessors are const.
#ifndef SHOTSTREAM_SERVER_CATALOG_CATALOG_H_
#define SHOTSTREAM_SERVER_CATALOG_CATALOG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/io/trace_ref.h"

namespace shotstream::catalog {

// With the source_xy shot key: where shot `shot_id` was fired.
struct SourcePosition {
  int64_t shot_id = 0;
  double x = 0;
  double y = 0;
};

struct ShotEntry {
  int64_t shot_id = 0;
  uint64_t first_segment = 0;  // index into the catalog's segments
  uint32_t n_traces = 0;
  uint32_t n_segments = 0;
};

// Traces of one shot in one file: a run (trace indices first, first + 1, ...) or a list
// (indices at list positions first, first + 1, ...). 16 bytes.
struct Segment {
  static constexpr uint32_t kList = 0x80000000u;  // in count_and_kind
  uint64_t first = 0;
  uint32_t file_id = 0;
  uint32_t count_and_kind = 0;
  uint32_t count() const { return count_and_kind & ~kList; }
  bool is_list() const { return (count_and_kind & kList) != 0; }
};

// Where trace index i of a file starts: first_offset + i * stride (arrays: 0 and 1, the
// position being the trace index itself).
struct FileGeometry {
  uint64_t first_offset = 0;
  uint64_t stride = 1;
};

// The list segments' trace indices: held (a catalog built here), or a view of memory
// another object keeps (a saved catalog's file mapping: page cache, not heap). A value.
class TraceList {
 public:
  TraceList() = default;
  TraceList(std::vector<uint32_t> held) : held_(std::move(held)) {}  // NOLINT: implicit
  TraceList(std::shared_ptr<const void> keeper, const uint32_t* data, size_t size)
      : keeper_(std::move(keeper)), data_(data), size_(size) {}

  absl::Span<const uint32_t> span() const {
    return keeper_ != nullptr ? absl::MakeConstSpan(data_, size_) : absl::MakeConstSpan(held_);
  }
  size_t size() const { return keeper_ != nullptr ? size_ : held_.size(); }
  uint64_t held_bytes() const { return held_.capacity() * sizeof(uint32_t); }
  uint64_t viewed_bytes() const { return keeper_ != nullptr ? size_ * sizeof(uint32_t) : 0; }
  std::vector<uint32_t>& held() { return held_; }

 private:
  std::vector<uint32_t> held_;
  std::shared_ptr<const void> keeper_;  // when viewing
  const uint32_t* data_ = nullptr;
  size_t size_ = 0;
};

// Called now and then during a scan with (traces scanned, traces in all).
using ScanProgress = std::function<void(uint64_t, uint64_t)>;

// Region reads of whole traces: one large read costs less than many 240-byte reads from
// the page cache, and far less where every read is a network round trip.
inline constexpr uint64_t kDefaultScanBlockBytes = 8 * 1024 * 1024;

class Catalog {
 public:
  Catalog() = default;

  // Shots sorted by id.
  const std::vector<ShotEntry>& shots() const { return shots_; }
  uint64_t n_traces() const { return n_traces_; }
  // source_xy catalogs: every shot's source position, by id; empty otherwise.
  const std::vector<SourcePosition>& source_positions() const { return positions_; }

  // The shot with this id, or null.
  const ShotEntry* Find(int64_t shot_id) const;
  // The shot's traces, in order (16 bytes a trace, for as long as the caller holds them).
  std::vector<io::TraceRef> TracesOf(const ShotEntry& shot) const;
  // Every shot's traces, shot after shot (tests and tools: it costs 16 bytes a trace).
  std::vector<io::TraceRef> AllTraces() const;

  // The compact columns, as CatalogStore saves them.
  const std::vector<Segment>& segments() const { return segments_; }
  absl::Span<const uint32_t> list() const { return list_.span(); }
  const std::vector<FileGeometry>& files() const { return files_; }
  // Bytes the catalog holds in the heap (its columns' capacities), and those it reads from
  // a saved catalog's mapping (the trace list of a reopened catalog: page cache).
  uint64_t ResidentBytes() const;
  uint64_t MappedBytes() const { return list_.viewed_bytes(); }

  // A catalog from saved columns, checked for consistency: INVALID_ARGUMENT saying what
  // does not fit (a shot's segments outside the column, a list outside the list column,
  // a file id without geometry, shots not sorted by id).
  static absl::StatusOr<Catalog> FromParts(std::vector<ShotEntry> shots,
                                           std::vector<Segment> segments,
                                           TraceList list,
                                           std::vector<FileGeometry> files,
                                           std::vector<SourcePosition> positions);

 private:
  friend class CatalogBuilder;
  std::vector<ShotEntry> shots_;       // sorted by id
  std::vector<Segment> segments_;      // grouped by shot, in shot order
  TraceList list_;                     // list segments' trace indices
  std::vector<FileGeometry> files_;    // by file id
  std::vector<SourcePosition> positions_;  // source_xy only, sorted by id
  uint64_t n_traces_ = 0;
};

// Builds a Catalog from traces added one group at a time, in the order a shot's traces
// should come back (file order). Memory while building: a 2-byte word per trace added
// alone (4 bytes once there are over 32,767 shots; 10-20 bytes per group of consecutive
// traces of one shot) plus the catalog itself at Finish, so a scan's peak stays within
// twice the catalog it makes.
//
// Thread-compatible: one thread adds.
class CatalogBuilder {
 public:
  explicit CatalogBuilder(std::vector<FileGeometry> files);

  // Traces [first, first + count) of file `file_id` (trace indices) belong to shot
  // `shot_id`, after the shot's traces added before.
  void Add(int64_t shot_id, uint32_t file_id, uint64_t first, uint64_t count = 1);
  // Room for about `traces` traces added one at a time, reserved now so that the log never
  // moves while it grows (reserved pages cost nothing until written).
  void Reserve(uint64_t traces);

  // The catalog: shots sorted by id (ids as added), and source positions when given.
  Catalog Finish(std::vector<SourcePosition> positions = {}) &&;

 private:
  uint32_t OrdinalOf(int64_t shot_id);

  std::vector<FileGeometry> files_;
  absl::flat_hash_map<int64_t, uint32_t> ordinals_;
  std::vector<int64_t> ids_;  // by ordinal
  // The groups added, in order (see catalog.cc): 16-bit words while every shot ordinal
  // fits in 15 bits, then 32-bit ones.
  std::vector<uint16_t> narrow_log_;
  std::vector<uint32_t> wide_log_;
  bool wide_ = false;
  uint64_t reserve_ = 0;
  uint32_t file_ = 0;          // where the next group is assumed to start
  uint64_t next_ = 0;
  uint64_t n_traces_ = 0;
};

}  // namespace shotstream::catalog

#endif  // SHOTSTREAM_SERVER_CATALOG_CATALOG_H_
