// Coalescing trace reader: sorts a request's trace offsets, merges neighbours within a
// gap into large positioned reads, decodes samples to float32, and scatters the traces
// back to the caller's order.
//
// Thread-safe: ReadTraces keeps its scratch buffer per thread; files are read with pread.
#ifndef SHOTSTREAM_SERVER_IO_COALESCING_READER_H_
#define SHOTSTREAM_SERVER_IO_COALESCING_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "absl/status/statusor.h"
#include "server/io/stored_traces.h"
#include "server/io/trace_file.h"
#include "server/io/trace_ref.h"

namespace shotstream::io {

struct CoalesceOptions {
  // Traces whose gap (bytes between the end of one and the start of the next) is at most
  // this are read in one call; the gap bytes are read and thrown away.
  uint64_t max_gap_bytes = 64 * 1024;
  // A merged read never grows beyond this (a single larger trace is read alone). 1 MiB
  // keeps the buffer in cache while it is decoded: measured 4.5 GB/s for shot gathers
  // from the page cache, against 1.75 GB/s with 8 MiB reads and 2.75 GB/s with one read
  // per trace (gather_read_bench). Raise it for storage where each read is a round trip.
  uint64_t max_read_bytes = 1 << 20;
};

// One positioned read covering traces order[first .. first+count) of a plan.
struct CoalescedRead {
  uint32_t file_id;
  uint64_t offset;
  uint64_t length;
  size_t first;
  size_t count;
};

struct ReadPlan {
  std::vector<size_t> order;  // trace indices sorted by (file_id, offset)
  std::vector<CoalescedRead> reads;
};

// Plans the reads for `traces`; trace_bytes_by_file[f] is the size of a whole trace
// (headers + samples) in file f. Duplicate traces are read once per occurrence.
ReadPlan PlanReads(absl::Span<const TraceRef> traces,
                   absl::Span<const uint64_t> trace_bytes_by_file,
                   const CoalesceOptions& options);

// A byte range of a file wanted by a read (a whole trace, or a trace's header, or a
// window of its samples).
struct Piece {
  uint32_t file_id = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Plans the reads for `pieces` (plan.order indexes them): sorted, neighbours within
// max_gap_bytes merged (the gap read through and thrown away), none beyond max_read_bytes.
ReadPlan PlanPieces(absl::Span<const Piece> pieces, const CoalesceOptions& options);

// The samples of every trace a read delivers: `count` samples from `start` (count 0: all).
// With a window, each trace's header and its window are separate pieces, so the bytes
// between them are read only where the gap rule reads through.
struct SampleRange {
  uint32_t start = 0;
  uint32_t count = 0;
};

struct ReadStats {
  uint64_t reads = 0;         // positioned reads issued
  uint64_t bytes_read = 0;    // including gap bytes
  uint64_t bytes_wanted = 0;  // bytes of the traces themselves
};

// Reads `traces` from `files` (indexed by file_id): trace i's samples are decoded to
// float32 at sample_dst[i] (n_samples floats, which every file must share), and its first
// 240-byte header is copied to header_dst + 240 * i when header_dst is not null. When
// trace_crc is not null, trace_crc[i] is the CRC-32 (zlib) of trace i's decoded samples,
// computed right after decoding them, while they are in cache.
absl::Status ReadTraces(absl::Span<const TraceFile* const> files,
                        absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                        float* const* sample_dst, uint8_t* header_dst,
                        ReadStats* stats = nullptr, uint32_t* trace_crc = nullptr,
                        SampleRange range = {});

// As ReadTraces, but trace i's samples are copied as stored (the file's format and byte
// order, range.count x bytes per sample) to raw_dst[i], and trace_crc[i] (not null) is the
// CRC-32 of them decoded to float32: what a client that decodes them gets.
absl::Status CopyStoredTraces(absl::Span<const TraceFile* const> files,
                              absl::Span<const TraceRef> traces, const CoalesceOptions& options,
                              uint8_t* const* raw_dst, uint8_t* header_dst, ReadStats* stats,
                              uint32_t* trace_crc, SampleRange range = {});

// For sending traces as they are stored (zero copy; every file of `traces` mapped): the
// traces located in their files' mappings, returned as StoredTraces that hold those
// mappings open (the TraceFiles must outlive them) and copy headers as ReadTraces does.
// The samples are not touched here: their Touch and Crc run under the SIGBUS guard, and
// a file truncated under them is DATA_LOSS naming the file, the byte offset and `shot_id`.
absl::StatusOr<std::unique_ptr<StoredTraces>> LocateStoredTraces(
    absl::Span<const TraceFile* const> files, absl::Span<const TraceRef> traces,
    const CoalesceOptions& options, uint8_t* header_dst, ReadStats* stats, SampleRange range,
    int64_t shot_id);

// As LocateStoredTraces for whole traces with no header wanted, where every trace of
// `traces` has its CRC-32 kept in its file (so it was located, its header checked and its
// samples sent whole before, under these same files): each trace is located from its
// offset alone, with no header copied, no page read and no stat. Null (nothing done)
// where a trace has no CRC-32 kept or a file is not mapped: LocateStoredTraces then.
absl::StatusOr<std::unique_ptr<StoredTraces>> LocateKeptTraces(
    absl::Span<const TraceFile* const> files, absl::Span<const TraceRef> traces,
    ReadStats* stats, int64_t shot_id);

// Bytes of stored traces their Touch has mapped in ahead of a send, in this process so
// far (a first pass over a file; a run whose CRC-32s are all kept is not touched again).
// Thread-safe.
uint64_t StoredBytesTouched();

// How `traces` are stored, where they all share one sample format and byte order (and
// `mapped`: every one is in a mapped file); nullopt where they differ.
struct StoredForm {
  segy::SampleFormat format = segy::SampleFormat::kIeeeFloat32;
  segy::ByteOrder byte_order = segy::ByteOrder::kBigEndian;
  bool mapped = false;
};
std::optional<StoredForm> FormOf(absl::Span<const TraceFile* const> files,
                                 absl::Span<const TraceRef> traces);

}  // namespace shotstream::io

#endif  // SHOTSTREAM_SERVER_IO_COALESCING_READER_H_
