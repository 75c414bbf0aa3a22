// ShotData: one shot (or one piece of a shot) as a read delivers it; ShotHead: what the
// pieces of a shot sent in pieces share. Plain data; no behaviour beyond n_chunks() and
// n_pieces().
#ifndef SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_
#define SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/sample_buffer.h"
#include "server/io/coalescing_reader.h"
#include "server/io/stored_traces.h"
#include "server/io/trace_ref.h"
#include "wire/encoding.h"

namespace shotstream::dataset {

// A shot read in pieces (Dataset::ReadShotHead, once, before its first piece): the traces
// the plan keeps (all of the shot's, or those meeting its conditions), the shot's header
// columns and raw headers, and how its traces split into pieces of whole chunks.
// Immutable once read; the reads of its pieces share it.
struct ShotHead {
  int64_t shot_id = 0;
  uint32_t n_traces = 0;  // kept
  uint32_t n_samples = 0;
  uint64_t total_bytes = 0;  // n_traces x n_samples x 4
  uint32_t traces_per_piece = 1;
  std::vector<io::TraceRef> traces;  // the kept traces, in shot order (the source's refs)
  // How all of them are stored (Source::FormOf): every piece is read in the same form
  // (native, located or decoded) as the shot read whole would be.
  std::optional<io::StoredForm> form;
  std::vector<std::pair<std::string, std::vector<double>>> headers;
  std::string trace_headers;  // with raw_trace_headers: n_traces * 240 bytes
  size_t n_pieces() const {
    return n_traces == 0 ? 1 : (n_traces + traces_per_piece - 1) / traces_per_piece;
  }
  // Piece p's first trace and trace count.
  uint32_t piece_first(size_t p) const { return static_cast<uint32_t>(p * traces_per_piece); }
  uint32_t piece_traces(size_t p) const {
    return n_traces == 0 ? 0 : std::min(traces_per_piece, n_traces - piece_first(p));
  }
};

// One shot: samples split into chunks of whole traces (float32, trace-major), the header
// columns asked for, and the CRC-32 of all sample bytes as they will be sent.
//
// Either decoded (little-endian, in `chunks`, crc32 set), or, where the stored bytes need
// no decoding, located: `stored` says where each trace's samples are in a file mapping
// (which lives as long as the source), sent without a copy, traces_per_chunk traces a
// chunk, big-endian when `big_endian`; ReadShot leaves crc32 0 for them (the stream's
// pipeline joins each chunk's where every trace's CRC-32 is kept; else the window takes
// them chunk by chunk, as each is sent: StoredTraces::Crc), unless the stream's encoder
// makes INT16 chunks of them first.
struct ShotData {
  int64_t shot_id = 0;
  uint32_t n_traces = 0;
  uint32_t n_samples = 0;
  uint64_t total_bytes = 0;
  std::vector<SampleBuffer> chunks;
  std::shared_ptr<io::StoredTraces> stored;  // null unless located
  uint32_t traces_per_chunk = 0;
  bool big_endian = false;
  std::vector<std::pair<std::string, std::vector<double>>> headers;
  // With raw_trace_headers: n_traces * 240 bytes, each trace header big-endian.
  std::string trace_headers;
  uint32_t crc32 = 0;
  // Each chunk's CRC-32 by the same rule as crc32 (which is their join): every decoded
  // (and encoded) chunk's; for stored traces, every chunk's or none (the window takes
  // them as it sends them).
  std::vector<uint32_t> chunk_crc32;
  // A piece of a shot read in pieces: the shot's head, and the piece's first trace in it
  // (n_traces, total_bytes and the chunks are the piece's; headers stay in the head).
  std::shared_ptr<const ShotHead> head;
  uint32_t first_trace = 0;
  // What `chunks` hold: float32 (decoded), or kNative (samples as stored, SEG-Y format
  // `sample_format`, big-endian when big_endian), or what the stream's encoder made of
  // them; chunk_traces[c] traces in chunk c (every encoding but stored float32).
  wire::Encoding encoding = wire::Encoding::kFloat32;
  int sample_format = 5;
  std::vector<uint32_t> chunk_traces;

  bool is_stored() const { return stored != nullptr && stored->size() > 0; }
  size_t n_chunks() const {
    return !is_stored() ? chunks.size()
                        : (stored->size() + traces_per_chunk - 1) / traces_per_chunk;
  }
};

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_SHOT_DATA_H_
