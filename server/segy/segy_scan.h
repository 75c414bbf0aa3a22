// The catalog of SEG-Y files: every trace header scanned once, traces grouped by the shot
// key, in parallel across files and within large ones.
//
// Thread-safe: a pure function over files that are thread-safe after opening.
#ifndef SHOTSTREAM_SERVER_SEGY_SEGY_SCAN_H_
#define SHOTSTREAM_SERVER_SEGY_SEGY_SCAN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "segy/trace_header.h"
#include "server/catalog/catalog.h"
#include "server/io/trace_file.h"

namespace shotstream::segy {

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

// Scans every trace header of `files` (file id = position) and groups traces by the
// 4-byte shot key (or source_xy: a shot per position, ids by first appearance). A shot's
// traces stay in file order (file id, then offset). Header scans read whole regions of
// up to `scan_block_bytes` (at least one trace; mapped files in place, in batches of up
// to 1024 traces, without copying), or one header at a time for traces longer than
// kStridedScanMinTraceBytes. Memory: the keys are kept run-length coded while scanning
// (8 bytes a run of one shot's traces) and the catalog is compact (catalog.h). Trace header sample counts (bytes 115-116) are
// informational: traces are as long as the binary header and the file size say, and
// disagreeing headers are counted in `report`. With check_trace_lengths (strict, opt-in),
// a nonzero count other than the file's is an error naming the file, the trace and the byte.
absl::StatusOr<catalog::Catalog> ScanCatalog(
    absl::Span<const io::TraceFile* const> files, const ShotKey& key,
    const catalog::ScanProgress& progress = nullptr,
    uint64_t scan_block_bytes = catalog::kDefaultScanBlockBytes,
    bool check_trace_lengths = false, uint64_t scan_unit_traces = kScanUnitTraces,
    ScanReport* report = nullptr);

}  // namespace shotstream::segy

#endif  // SHOTSTREAM_SERVER_SEGY_SEGY_SCAN_H_
