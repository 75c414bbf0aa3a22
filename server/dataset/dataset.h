// A dataset: the files matching a glob (SEG-Y, Seismic Unix, NumPy .npy or HDF5), their
// catalog, and reads of whole shots decoded to float32 with the asked-for trace header
// columns. Every source goes through the same catalog and ReadShot; what differs is
// where samples and header values come from (docs/sources.md).
//
// Thread-safe after Load: ReadShot may be called from many reader threads at once.
#ifndef SHOTSTREAM_SERVER_DATASET_DATASET_H_
#define SHOTSTREAM_SERVER_DATASET_DATASET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/catalog/catalog.h"
#include "common/sample_buffer.h"
#include "server/io/coalescing_reader.h"
#include "server/dataset/shot_data.h"
#include "server/hdf5/hdf5_file.h"
#include "server/segy/segy_file.h"
#include "segy/trace_header.h"

namespace shotstream::dataset {

// What a dataset's files are. kAuto: .h5 and .hdf5 names are HDF5, files with the NumPy
// magic string are .npy arrays, .su names are Seismic Unix, the rest SEG-Y.
enum class SourceFormat { kAuto, kSegy, kNpy, kHdf5 };

// "auto", "segy" (SEG-Y or SU), "npy" or "hdf5".
absl::StatusOr<SourceFormat> ParseSourceFormat(absl::string_view name);
absl::string_view SourceFormatName(SourceFormat format);

struct DatasetSpec {
  std::string name;
  std::vector<std::string> globs;  // files: every match, sorted by name, deduplicated
  segy::ShotKey shot_key;
  std::optional<segy::ByteOrder> byte_order;  // force instead of detect
  segy::IoMode io = segy::IoMode::kPread;     // the config's default is auto
  io::CoalesceOptions coalesce;
  // Where the catalog is kept (DIR/NAME.catalog); empty: built in memory every start.
  std::string catalog_dir;
  uint64_t scan_block_bytes = catalog::kDefaultScanBlockBytes;
  // Scan the files even when catalog_dir holds a catalog that looks current (a rebuild
  // after a read found the files changed).
  bool ignore_saved_catalog = false;
  // Called (from a reader thread) when ReadShot finds that a file changed since the
  // catalog was built: a file's identity, size or mtime moved, or a trace header's shot
  // key is not the shot the catalog has there. The read itself fails DATA_LOSS.
  std::function<void(const class Dataset&, const absl::Status&)> on_files_changed;
  // Strict mode (opt-in): refuse files whose trace headers (bytes 115-116) give another
  // sample count than the binary header's. Off, such counts are reported in notes().
  bool check_trace_lengths = false;
  SourceFormat format = SourceFormat::kAuto;
  // HDF5: the dataset of samples; its shot ids and header columns are beside it.
  std::string h5_path = "/data";
  // For files that do not say it (.npy; HDF5 without the attribute); 0: unknown.
  double sample_interval_us = 0;
};

// The files one glob pattern matches, sorted by name; NOT_FOUND naming the pattern when
// it matches none (unless may_match_nothing).
absl::StatusOr<std::vector<std::string>> ExpandGlob(const std::string& pattern,
                                                    bool may_match_nothing = false);

// "--dataset=NAME=GLOB" parsing; the glob may hold commas to give several patterns.
absl::StatusOr<std::pair<std::string, std::string>> SplitDatasetFlag(absl::string_view flag);

// Names may be letters, digits, '.', '_' and '-' (they never become paths).
absl::Status ValidateDatasetName(absl::string_view name);

// Opens `path` as a file of `spec` is opened (its headers; no catalog), for
// --check_config; errors name the dataset, the file and the reason.
absl::Status CheckDatasetFile(const DatasetSpec& spec, const std::string& path);

class Dataset {
 public:
  // Opens every file, checks they share n_samples, and builds the catalog. Errors name
  // the dataset, the file and the reason.
  static absl::StatusOr<std::unique_ptr<Dataset>> Load(const DatasetSpec& spec,
                                                       const catalog::ScanProgress& progress =
                                                           nullptr);

  const std::string& name() const { return spec_.name; }
  const DatasetSpec& spec() const { return spec_; }
  const catalog::Catalog& catalog() const { return catalog_; }
  uint32_t n_samples() const { return n_samples_; }
  double sample_interval_us() const { return sample_interval_us_; }
  int sample_format() const { return sample_format_; }
  // The files' kind once loaded: kSegy (SEG-Y and SU), kNpy or kHdf5.
  SourceFormat source_format() const { return format_; }
  size_t n_files() const { return files_.size() + h5_files_.size(); }
  // SEG-Y, SU and .npy datasets: file i (HDF5 files are not SegyFiles).
  const segy::SegyFile& file(size_t i) const { return *files_[i]; }
  uint64_t file_bytes() const;   // all files together
  size_t mapped_files() const;   // read through a memory map
  // The header names StreamShots may ask of this dataset: every SEG-Y field for SEG-Y;
  // for .npy field_record (the shot id) and trace_number (1.. within the shot); for
  // HDF5 those and the file's header columns.
  const std::vector<std::string>& header_fields() const { return header_fields_; }
  // Whether header values come from stored 240-byte trace headers (SEG-Y, SU).
  bool has_trace_headers() const { return format_ == SourceFormat::kSegy; }
  // How the catalog came to be: "built", "reused (PATH)", or "rebuilt: REASON".
  const std::string& catalog_origin() const { return catalog_origin_; }
  double catalog_seconds() const { return catalog_seconds_; }
  // What loading had to decide that an operator should hear of, each once per dataset
  // (a sample count taken from another header, trace headers that disagree with the
  // binary header, a revision word read as rev 1); the server prints them on stderr.
  const std::vector<std::string>& notes() const { return notes_; }

  // The CRC-32 of stored traces of shot `shot_id` (ShotData::stored and stored_file, or
  // a run of them) continued from `crc`, read under the mapping's SIGBUS guard: DATA_LOSS
  // naming the file and byte offset when it was truncated since it was opened.
  // `n_samples`: samples per trace sent (ShotData::n_samples, a window's).
  absl::StatusOr<uint32_t> StoredCrc(int64_t shot_id, absl::Span<const uint8_t* const> traces,
                                     absl::Span<const uint32_t> files, uint32_t n_samples,
                                     uint32_t crc) const;
  // Reads one byte of every page of those traces, under the same guard and with the same
  // error: their first touch, where a page not in memory is read from disk.
  absl::Status TouchStored(int64_t shot_id, absl::Span<const uint8_t* const> traces,
                           absl::Span<const uint32_t> files, uint32_t n_samples) const;

  // Reads one shot. Chunks hold at most max(1, max_chunk_bytes / trace bytes) traces.
  // `selection` narrows it to a window of samples and the traces meeting its conditions
  // (a shot may be left with none: one empty chunk), and may keep integer and IBM samples
  // as stored (NATIVE, where the shot's traces share such a format and byte order).
  // NOT_FOUND for an unknown shot id. Never serves stale data: each file of the shot is
  // checked to be the one opened, unchanged, and each trace header's shot key to be the
  // shot asked for; otherwise DATA_LOSS naming the file and byte ("changed since its
  // catalog was built"), after spec().on_files_changed is called.
  absl::StatusOr<ShotData> ReadShot(int64_t shot_id,
                                    absl::Span<const segy::HeaderSelector> headers,
                                    uint64_t max_chunk_bytes,
                                    io::ReadStats* stats = nullptr,
                                    ZeroCopy zero_copy = ZeroCopy::kOff,
                                    bool raw_trace_headers = false,
                                    const TraceSelection& selection = {}) const;

 private:
  Dataset() = default;
  // Whether the traces may be sent as stored under `zero_copy`: their byte order (true:
  // big-endian), or nullopt where they must be decoded.
  std::optional<bool> StoredByteOrder(absl::Span<const io::TraceRef> traces,
                                      ZeroCopy zero_copy) const;
  // Bytes per sample where the traces can be sent NATIVE (one format sent natively, one
  // byte order), else 0.
  int NativeWidth(absl::Span<const io::TraceRef> traces) const;
  absl::Status LoadOrBuildCatalog(const catalog::ScanProgress& progress);
  // The catalogs of arrays: shots by position (.npy, HDF5 [shots, traces, samples]) or by
  // the shot key's header column (HDF5 [traces, samples]).
  absl::Status BuildNpyCatalog();
  absl::Status LoadHdf5(const std::vector<std::string>& paths);
  absl::Status BuildHdf5Catalog();
  // HDF5: reads samples `range` of `traces` into dst[i], with each trace's CRC-32.
  absl::Status ReadHdf5Traces(absl::Span<const io::TraceRef> traces, io::SampleRange range,
                              uint8_t* const* dst, uint32_t* trace_crc,
                              io::ReadStats* stats) const;
  // Sources without stored trace headers: a 240-byte header for trace i of shot
  // `shot_id` at `dst` in the order OrderOf says, with the fields the source has (.npy:
  // for every read, its values come from it; HDF5: for raw trace headers only).
  void SynthesizeHeader(int64_t shot_id, size_t i, const io::TraceRef& t, uint8_t* dst) const;
  // The byte order of trace t's (stored or synthesized) header.
  segy::ByteOrder OrderOf(const io::TraceRef& t) const;
  // Trace i (of shot `shot_id`)'s value of `h`: from its header `raw`, or for HDF5 from
  // the file's column (exact float64).
  double TraceValue(int64_t shot_id, size_t i, const io::TraceRef& t, const uint8_t* raw,
                    const segy::HeaderSelector& h) const;
  // The files of `traces` are unchanged and each header (raw, 240 bytes a trace) carries
  // shot `shot_id`'s key; else DATA_LOSS, after the on_files_changed hook.
  absl::Status CheckFilesOf(absl::Span<const io::TraceRef> traces) const;
  absl::Status CheckShotKeys(int64_t shot_id, absl::Span<const io::TraceRef> traces,
                             const uint8_t* raw_headers) const;
  absl::Status FilesChanged(absl::Status why) const;
  // Calls `run(first, count, span)` for each run of stored traces that follow each other
  // in one file (`span` bytes from traces[first]) under the mapping's SIGBUS guard.
  absl::Status ForEachStoredRun(
      int64_t shot_id, absl::Span<const uint8_t* const> traces,
      absl::Span<const uint32_t> files, uint32_t n_samples,
      absl::FunctionRef<void(size_t first, size_t count, size_t span)> run) const;

  DatasetSpec spec_;
  std::vector<std::unique_ptr<segy::SegyFile>> files_;
  std::vector<const segy::SegyFile*> file_ptrs_;
  std::vector<std::unique_ptr<hdf5::Hdf5File>> h5_files_;
  // Per HDF5 file: its columns that have a SEG-Y field, and the field's place.
  struct ColumnPlace {
    int byte;
    int size;
    const std::vector<double>* values;
  };
  std::vector<std::vector<ColumnPlace>> h5_places_;
  SourceFormat format_ = SourceFormat::kSegy;
  std::vector<std::string> header_fields_;
  catalog::Catalog catalog_;
  uint32_t n_samples_ = 0;
  double sample_interval_us_ = 0;
  int sample_format_ = 0;
  std::string catalog_origin_;
  double catalog_seconds_ = 0;
  struct LayoutNote {
    std::string text;
    std::string first_path;
    size_t more_files;
  };
  std::vector<LayoutNote> layout_notes_;
  std::vector<std::string> notes_;
};

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_DATASET_H_
