// A dataset: the files matching its globs, read by the source of their format
// (server/source: SEG-Y, SU, NumPy, HDF5, ...), with the catalog that source built, and
// reads of whole shots: checked (the files unchanged, each trace's shot key where the
// source stores one), selected (a window of samples, traces meeting conditions, header
// columns) and split into chunks, the same for every format.
//
// Thread-safe after Load: ReadShot may be called from many reader threads at once.
#ifndef SHOTSTREAM_SERVER_DATASET_DATASET_H_
#define SHOTSTREAM_SERVER_DATASET_DATASET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "segy/trace_header.h"
#include "server/catalog/catalog.h"
#include "server/dataset/shot_data.h"
#include "server/dataset/shot_plan.h"
#include "server/io/coalescing_reader.h"
#include "server/io/trace_file.h"
#include "server/source/source.h"

namespace shotstream::dataset {

struct DatasetSpec {
  std::string name;
  std::vector<std::string> globs;  // files: every match, sorted by name, deduplicated
  // "auto" (each file's format detected: server/formats/formats.h) or a format's name.
  std::string format = "auto";
  std::string shot_key = "field_record";  // resolved by the format
  std::optional<segy::ByteOrder> byte_order;  // force instead of detect
  io::IoMode io = io::IoMode::kPread;         // the config's default is auto
  io::CoalesceOptions coalesce;
  // Where the catalog is kept (DIR/NAME.catalog); empty: built in memory every start.
  std::string catalog_dir;
  uint64_t scan_block_bytes = catalog::kDefaultScanBlockBytes;
  // Scan the files even when catalog_dir holds a catalog that looks current (a rebuild
  // after a read found the files changed).
  bool ignore_saved_catalog = false;
  // Called (from a reader thread) when ReadShot finds that a file changed since the
  // catalog was built: a file's identity, size or mtime moved, or a trace header's shot
  // key is not the shot the catalog has there, whether found before the read or by the
  // read itself (a Zarr chunk, an HDF5 file). The request that found it fails DATA_LOSS,
  // as do later reads of changed files through this Dataset (streams that started before
  // the change); new requests meet the rebuild (DatasetEntry: UNAVAILABLE).
  std::function<void(const class Dataset&, const absl::Status&)> on_files_changed;
  // Strict mode (opt-in): refuse files whose trace headers (bytes 115-116) give another
  // sample count than the binary header's. Off, such counts are reported in notes().
  bool check_trace_lengths = false;
  // The array inside a file or store (HDF5: /data); empty: the format's default.
  std::string array_path;
  // For files that do not say it (.npy; HDF5 without the attribute); 0: unknown.
  double sample_interval_us = 0;
  // on_bad_file: skip. A file that does not open or scan as its format is left out (and
  // listed in bad_files()) instead of failing the dataset; FAILED only when none is left.
  bool skip_bad_files = false;
};

// The files one glob pattern matches, sorted by name; NOT_FOUND naming the pattern when
// it matches none (unless may_match_nothing).
absl::StatusOr<std::vector<std::string>> ExpandGlob(const std::string& pattern,
                                                    bool may_match_nothing = false);

// Opens `path` as a file of `spec` is opened (its headers; no catalog), for
// --check_config; errors name the dataset, the file and the reason.
absl::Status CheckDatasetFile(const DatasetSpec& spec, const std::string& path);

class Dataset {
 public:
  // Opens every file with its format's source, which builds (or reuses) the catalog.
  // Errors name the dataset, the file and the reason.
  static absl::StatusOr<std::unique_ptr<Dataset>> Load(const DatasetSpec& spec,
                                                       const catalog::ScanProgress& progress =
                                                           nullptr);
  // A dataset over a source opened elsewhere (tests: source::FakeSource); spec's name and
  // change hook apply, its file settings do not.
  static std::unique_ptr<Dataset> FromSource(const DatasetSpec& spec,
                                             std::unique_ptr<source::Source> source);

  const std::string& name() const { return spec_.name; }
  const DatasetSpec& spec() const { return spec_; }
  const catalog::Catalog& catalog() const { return source_->catalog(); }
  const source::SourceInfo& info() const { return source_->info(); }
  uint32_t n_samples() const { return info().n_samples; }
  double sample_interval_us() const { return info().sample_interval_us; }
  int sample_format() const { return info().sample_format; }
  const std::string& format() const { return info().format; }  // "segy", "npy", ...
  size_t n_files() const { return info().n_files; }
  uint64_t file_bytes() const { return info().file_bytes; }
  // The header names StreamShots may ask of this dataset (every standard SEG-Y field
  // too where info().any_standard_field).
  const std::vector<std::string>& header_fields() const { return info().header_fields; }
  // How the catalog came to be: "built", "reused (PATH)", or "rebuilt: REASON".
  const std::string& catalog_origin() const { return info().catalog_origin; }
  double catalog_seconds() const { return catalog_seconds_; }
  // Under skip_bad_files, the files left out: "PATH: why", in the order found.
  const std::vector<std::string>& bad_files() const { return bad_files_; }
  // What loading had to decide that an operator should hear of, each once per dataset
  // (a sample count taken from another header, trace headers that disagree with the
  // binary header, a revision word read as rev 1); the server prints them on stderr.
  const std::vector<std::string>& notes() const { return info().notes; }
  // The source itself (tests and tools).
  const source::Source& source() const { return *source_; }

  // A header field this dataset can return: INVALID_ARGUMENT naming it, the closest
  // field, and the fields there are, for any other.
  absl::StatusOr<segy::HeaderSelector> ResolveHeader(const std::string& name) const;

  // Reads one shot as `plan` says: samples [start, start + count) of the traces that meet
  // its conditions (a shot may be left with none: one empty chunk), in chunks of at most
  // max(1, max_chunk_bytes / trace bytes) traces, as float32, or as stored (native), or
  // located in the mapping (zero copy), with the asked-for header columns and raw headers.
  // NOT_FOUND for an unknown shot id. Never serves stale data: each file of the shot is
  // checked to be the one opened, unchanged, and each trace's shot key (where the source
  // stores one) to be the shot asked for; otherwise DATA_LOSS naming the file and byte
  // ("changed since its catalog was built"), after spec().on_files_changed is called.
  absl::StatusOr<ShotData> ReadShot(int64_t shot_id, const ReadPlan& plan,
                                    io::ReadStats* stats = nullptr) const;
  // A shot read in pieces, for shots larger than a stream's piece size: its head first
  // (the traces kept: where the plan has conditions, or asks for header columns or raw
  // headers, a header pass reads one sample a trace for them; the columns; pieces of
  // whole chunks holding about piece_bytes of float32 each, at least one chunk), then each
  // piece as ReadShot reads a shot (no header columns: the head has them), with the same
  // checks. A piece's chunk_crc32 and crc32 are its own.
  absl::StatusOr<ShotHead> ReadShotHead(int64_t shot_id, const ReadPlan& plan,
                                        uint64_t piece_bytes,
                                        io::ReadStats* stats = nullptr) const;
  absl::StatusOr<ShotData> ReadPiece(const ShotHead& head, size_t piece, const ReadPlan& plan,
                                     io::ReadStats* stats = nullptr) const;

 private:
  Dataset() = default;
  // The files of `traces` are unchanged; else DATA_LOSS, after the on_files_changed hook.
  absl::Status CheckFilesOf(absl::Span<const io::TraceRef> traces) const;
  // Each trace's stored shot key is shot `shot_id`'s (or its source position the
  // catalog's); else DATA_LOSS, after the hook.
  absl::Status CheckShotKeys(int64_t shot_id, absl::Span<const io::TraceRef> traces,
                             const source::TraceHeaders& headers) const;
  // Calls the hook; DATA_LOSS saying whether the catalog is being rebuilt.
  absl::Status FilesChanged(absl::Status why) const;
  // source_->Read; where it fails DATA_LOSS, the files of its traces are checked so that a
  // change the read found (and the source now reports) starts the rebuild at once.
  absl::StatusOr<source::ReadResult> ReadFromSource(const source::TraceRead& read) const;
  // The shot's catalog traces, its files checked; NOT_FOUND / INVALID_ARGUMENT for an
  // unknown shot or a window outside the traces.
  absl::StatusOr<std::vector<io::TraceRef>> ShotTraces(int64_t shot_id,
                                                       const ShotSelection& sel) const;
  io::SampleRange RangeOf(const ShotSelection& sel) const;
  // A trace's bytes as float32 (out) and as it travels (wire: NATIVE's stored width where
  // the plan sends natively and the traces share a format), and the traces a chunk holds.
  struct TraceBytes {
    int native_width = 0;  // 0: not sent natively
    uint64_t out = 0;
    uint64_t wire = 0;
    uint64_t per_chunk = 1;
  };
  TraceBytes TraceBytesOf(const ReadPlan& plan, const std::optional<io::StoredForm>& form) const;
  // Reads `traces` of shot `shot_id` into chunks; with `select`, keeps those meeting the
  // plan's conditions and makes the header columns and raw headers. `shot_form`: how the
  // whole shot's traces are stored (a piece is read as its shot is); null: theirs.
  absl::StatusOr<ShotData> ReadTraces(
      int64_t shot_id, const ReadPlan& plan, absl::Span<const io::TraceRef> traces, bool select,
      io::ReadStats* stats, const std::optional<io::StoredForm>* shot_form = nullptr) const;
  // The traces (of n) whose header values meet every condition of `sel`.
  static std::vector<size_t> Kept(const ShotSelection& sel, const source::TraceHeaders& headers,
                                  size_t n);
  // The header columns and raw headers `sel` asks for, of traces `kept`.
  static void Select(const ShotSelection& sel, const source::TraceHeaders& headers,
                     const std::vector<size_t>& kept,
                     std::vector<std::pair<std::string, std::vector<double>>>* columns,
                     std::string* trace_headers);

  DatasetSpec spec_;
  std::unique_ptr<source::Source> source_;
  double catalog_seconds_ = 0;
  std::vector<std::string> bad_files_;
};

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_DATASET_H_
