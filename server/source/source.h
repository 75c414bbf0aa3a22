// Source: one file format's reading of a dataset. A source opens the dataset's files,
// finds each shot's traces (its catalog), reads the samples of a plan of a shot's traces
// into the caller's buffers, says each trace's header values, and tells whether its files
// are still the ones it opened. Everything above it (server/dataset: checks, windows,
// conditions, chunks; the stream; the wire) is the same for every format.
//
// A format is a package (server/segy, server/npy, server/hdf5, server/zarr) that defines a
// Format and is listed once in server/formats/formats.cc. docs/design.md says how to add one.
//
// Implementations are thread-safe after Open: reads of several streams run on several
// reader threads at once.
#ifndef SHOTSTREAM_SERVER_SOURCE_SOURCE_H_
#define SHOTSTREAM_SERVER_SOURCE_SOURCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "segy/trace_header.h"
#include "server/catalog/catalog.h"
#include "server/env/env.h"
#include "server/io/coalescing_reader.h"
#include "server/io/stored_traces.h"
#include "server/io/trace_file.h"
#include "server/io/trace_ref.h"

namespace shotstream::source {

// What a dataset's settings say of its files (every format takes what applies to it).
struct SourceSpec {
  std::string dataset;             // the dataset's name, for messages
  std::vector<std::string> paths;  // its files (or stores), sorted: file id = position
  std::string shot_key = "field_record";  // as configured; the format resolves it
  std::optional<segy::ByteOrder> byte_order;  // force instead of detect (SEG-Y)
  io::IoMode io = io::IoMode::kPread;
  io::CoalesceOptions coalesce;
  uint64_t scan_block_bytes = catalog::kDefaultScanBlockBytes;
  bool check_trace_lengths = false;  // SEG-Y: refuse headers that give another length
  // The array inside a file or store (HDF5's /data; a Zarr store's array); empty: the
  // format's default.
  std::string array_path;
  double sample_interval_us = 0;  // for files that do not say; 0: unknown
  // Where the catalog may be kept and reused (empty: built every time), and whether a
  // saved one must be ignored (a rebuild after a read found the files changed).
  std::string catalog_path;
  bool ignore_saved_catalog = false;
  catalog::ScanProgress progress;  // may be empty
  // Where the files (and the catalog) are read and written: the process's POSIX Env when
  // null; a test's MemEnv or FaultEnv. libhdf5 opens its own files (docs/design.md).
  env::Env* env = nullptr;
};

// What a source is, once open.
struct SourceInfo {
  std::string format;  // the Format's name
  uint32_t n_samples = 0;  // every file's
  double sample_interval_us = 0;
  int sample_format = 5;  // SEG-Y code of the stored samples (of the first file)
  // The header names a stream may ask: `header_fields`, and with any_standard_field every
  // standard SEG-Y field (segy::ResolveHeader) too.
  std::vector<std::string> header_fields;
  bool any_standard_field = false;
  // The stored header field that identifies each trace's shot, when reads can check it
  // against the catalog (a file rewritten in place keeps its size and mtime); or
  // source_xy: the shot's source position.
  std::optional<segy::HeaderSelector> shot_key;
  bool source_xy = false;
  size_t n_files = 0;
  uint64_t file_bytes = 0;
  std::string read_by;         // "mmap", "pread", "mmap 3, pread 1", "libhdf5", ...
  std::string catalog_origin;  // "built", "reused (PATH)", "rebuilt: WHY, saved to PATH"...
  std::vector<std::string> notes;  // what an operator should hear of, once each
};

// How a read delivers each trace's samples.
enum class SampleForm {
  kFloat32,  // decoded to float32 little-endian: range.count x 4 bytes at dst[i]
  kStored,   // as stored (FormOf's format and byte order): range.count x width at dst[i]
  kLocate,   // not copied: ReadResult::stored points at them (FormOf said mapped IEEE)
};

// One read: traces of one shot (its catalog's, in order) and what of them is wanted.
struct TraceRead {
  int64_t shot_id = 0;
  absl::Span<const io::TraceRef> traces;
  io::SampleRange range;  // range.count > 0
  SampleForm form = SampleForm::kFloat32;
  uint8_t* const* dst = nullptr;  // kFloat32, kStored: trace i's samples go to dst[i]
  // kFloat32, kStored: trace i's CRC-32 of its samples as float32 (what a client gets).
  uint32_t* trace_crc = nullptr;
  io::ReadStats* stats = nullptr;  // may be null
  // kLocate of whole traces where no header is wanted: a source may then leave out the
  // headers of traces it has read, checked and sent whole before, under the same files
  // (their CRC-32s kept); ReadResult::headers comes back null when it did.
  bool skip_checked_headers = false;
};

// The header values of the traces of one read. Thread-compatible.
class TraceHeaders {
 public:
  virtual ~TraceHeaders() = default;
  // Trace i's value of `h` (as HeaderColumn reports it: scalars applied).
  virtual double Value(size_t i, const segy::HeaderSelector& h) const = 0;
  // Trace i's standard 240-byte trace header, big-endian as SEG-Y stores it: the stored
  // one (little-endian fields swapped), or one made from the fields the source has.
  virtual void BigEndianHeader(size_t i, uint8_t* dst) const = 0;
};

struct ReadResult {
  // Null only where TraceRead::skip_checked_headers let the source leave them out.
  std::unique_ptr<TraceHeaders> headers;
  std::unique_ptr<io::StoredTraces> stored;  // kLocate only
};

class Source {
 public:
  virtual ~Source() = default;
  virtual const SourceInfo& info() const = 0;
  virtual const catalog::Catalog& catalog() const = 0;
  // OK while file `file_id` is the one opened, unchanged; DATA_LOSS naming it and what
  // changed otherwise. Cheap: one stat(2) or its like.
  virtual absl::Status CheckUnchanged(uint32_t file_id) const = 0;
  // File `file_id`'s path, and, for messages, where trace `t` is in it: "byte offset N"
  // (header_byte 0: the trace itself) or "byte N" (its header's byte header_byte, 1-based)
  // for files of traces; "trace N of /data" and the like for arrays.
  virtual const std::string& path(uint32_t file_id) const = 0;
  virtual std::string Where(const io::TraceRef& t, int header_byte) const = 0;
  // How every trace of `traces` is stored, where they share a SEG-Y sample format and
  // byte order that kStored can copy (and kLocate, with `mapped`); nullopt otherwise.
  virtual std::optional<io::StoredForm> FormOf(absl::Span<const io::TraceRef> traces) const = 0;
  // Reads as `read` says; the headers of its traces come back (and the located samples
  // for kLocate). Errors name the file and the byte or trace.
  virtual absl::StatusOr<ReadResult> Read(const TraceRead& read) const = 0;
};

// A file format: how its files are recognised and opened. One per package; the registry
// (formats.h) lists them.
struct Format {
  absl::string_view name;  // "segy", "npy", "hdf5", "zarr"
  // Under format: auto, whether the file (or directory) at `path` is of this format, by its
  // name or its first bytes (`head`: up to 512).
  bool (*claims)(const std::string& path, absl::Span<const uint8_t> head);
  // Whether a configured name (a glob pattern) suggests this format (".h5"), so that a
  // configuration can be checked before any file is opened.
  bool (*suggested_by)(absl::string_view pattern);
  // OK for a shot key this format can group traces by; INVALID_ARGUMENT saying why not.
  absl::Status (*check_shot_key)(const std::string& shot_key);
  // Opens every file of `spec` and builds (or loads) the catalog. Errors name the file
  // and the reason.
  absl::StatusOr<std::unique_ptr<Source>> (*open)(const SourceSpec& spec);
  // --check_config: opens `path` as a file of this format (its headers, no catalog).
  absl::Status (*check_file)(const SourceSpec& spec, const std::string& path);
};

}  // namespace shotstream::source

#endif  // SHOTSTREAM_SERVER_SOURCE_SOURCE_H_
