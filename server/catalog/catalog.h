// Catalog: shot id -> the shot's traces (file id, byte offset), built once by scanning
// trace headers so that requests never parse headers.
//
// Thread-safe after Build: all accessors are const.
#ifndef SHOTSTREAM_SERVER_CATALOG_CATALOG_H_
#define SHOTSTREAM_SERVER_CATALOG_CATALOG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/io/trace_ref.h"
#include "server/segy/segy_file.h"
#include "segy/trace_header.h"

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
// Traces longer than this are scanned with one 240-byte read per header instead, unless
// the first reads average more than kSlowReadSeconds (network storage).
inline constexpr uint64_t kStridedScanMinTraceBytes = 2048;
inline constexpr double kSlowReadSeconds = 50e-6;
// Large files are scanned in parallel pieces of this many traces.
inline constexpr uint64_t kScanUnitTraces = 1 << 18;

// What a scan saw that is worth saying once, though not an error.
struct ScanReport {
  // Traces whose header sample count (bytes 115-116) is nonzero and differs from the
  // file's (the binary header's, which with the file size fixes the trace length).
  uint64_t trace_length_mismatches = 0;
  std::string first_trace_length_mismatch;  // the first such trace: file, byte, counts
};

class Catalog {
 public:
  Catalog() = default;

  // Scans every trace header of `files` (file id = position) and groups traces by the
  // 4-byte shot key. A shot's traces stay in file order (file id, then offset).
  // Header scans read whole regions of up to `scan_block_bytes` (at least one trace), or
  // one header at a time for traces longer than kStridedScanMinTraceBytes.
  // Trace header sample counts (bytes 115-116) are informational: traces are as long as
  // the binary header and the file size say, and disagreeing headers are counted in
  // `report`. With check_trace_lengths (strict, opt-in), a nonzero count other than the
  // file's is an error naming the file, the trace and the byte.
  static absl::StatusOr<Catalog> Build(absl::Span<const segy::SegyFile* const> files,
                                       const segy::ShotKey& key,
                                       const ScanProgress& progress = nullptr,
                                       uint64_t scan_block_bytes = kDefaultScanBlockBytes,
                                       bool check_trace_lengths = false,
                                       uint64_t scan_unit_traces = kScanUnitTraces,
                                       ScanReport* report = nullptr);

  // Assembles a catalog from already grouped columns (for loaders and tests).
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
