// Catalog: shot id -> the shot's traces (file id, position in the file: a byte offset for
// files of fixed-length traces, a trace index for arrays), built once by a source (a scan
// of SEG-Y trace headers, an array's shape or header column) so that requests never parse
// headers. A shot's traces are in file order.
//
// Thread-safe once built: all accessors are const.
#ifndef SHOTSTREAM_SERVER_CATALOG_CATALOG_H_
#define SHOTSTREAM_SERVER_CATALOG_CATALOG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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
  uint64_t first_trace = 0;  // index into Catalog::traces()
  uint32_t n_traces = 0;
};

// Called now and then during a scan with (traces scanned, traces in all).
using ScanProgress = std::function<void(uint64_t, uint64_t)>;

// Region reads of whole traces: one large read costs less than many 240-byte reads from
// the page cache, and far less where every read is a network round trip.
inline constexpr uint64_t kDefaultScanBlockBytes = 8 * 1024 * 1024;

class Catalog {
 public:
  Catalog() = default;

  // A catalog of grouped columns: shots sorted by id, each shot's traces together.
  static Catalog FromColumns(std::vector<ShotEntry> shots, std::vector<io::TraceRef> traces,
                             std::vector<SourcePosition> positions = {});

  // Shots sorted by id.
  const std::vector<ShotEntry>& shots() const { return shots_; }
  uint64_t n_traces() const { return traces_.size(); }
  const std::vector<io::TraceRef>& traces() const { return traces_; }
  // source_xy catalogs: every shot's source position, by id; empty otherwise.
  const std::vector<SourcePosition>& source_positions() const { return positions_; }

  // The shot with this id, or null.
  const ShotEntry* Find(int64_t shot_id) const;
  absl::Span<const io::TraceRef> TracesOf(const ShotEntry& shot) const {
    return absl::MakeConstSpan(traces_).subspan(shot.first_trace, shot.n_traces);
  }

 private:
  std::vector<ShotEntry> shots_;
  std::vector<io::TraceRef> traces_;  // grouped by shot, file order within a shot
  std::vector<SourcePosition> positions_;  // source_xy only, sorted by id
};

}  // namespace shotstream::catalog

#endif  // SHOTSTREAM_SERVER_CATALOG_CATALOG_H_
