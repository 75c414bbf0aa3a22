// An HDF5 file of shots, read with the HDF5 C library: a dataset (/data, or another path)
// of shape [shots, traces, samples], or [traces, samples] with per-trace header columns in
// a group `headers` beside it; any integer or float type, either byte order, contiguous or
// chunked with the filters the library has (deflate, shuffle, fletcher32, ...).
//
// Thread-safe after Open: every call into the library holds one process-wide lock (the
// library's own is not relied on), so reads of different files do not overlap. Opening a
// file that changed (size or mtime) while an older Hdf5File of it is open retires the older
// one (its reads then fail DATA_LOSS), so that the new one reads the file as it is now
// rather than through the library's state of the old open.
#ifndef SHOTSTREAM_SERVER_HDF5_HDF5_FILE_H_
#define SHOTSTREAM_SERVER_HDF5_HDF5_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "segy/sample_format.h"
#include "server/common/file_identity.h"

namespace shotstream::hdf5 {

struct Hdf5Layout {
  std::string h5_path;          // the dataset read, e.g. "/data"
  std::vector<uint64_t> shape;  // rank 2 or 3; the last dimension is the samples
  uint32_t n_samples = 0;
  uint64_t n_traces = 0;  // product of the other dimensions
  // The stored type as the closest SEG-Y format code (for DatasetInfo) and byte order.
  segy::SampleFormat format = segy::SampleFormat::kIeeeFloat32;
  segy::ByteOrder byte_order = segy::ByteOrder::kLittleEndian;
  std::string type_name;            // "float32 little-endian", ...
  std::vector<uint64_t> chunk;      // chunk shape; empty when contiguous
  std::vector<std::string> filters; // names of the filters, in pipeline order
  double sample_interval_us = 0;    // from the attribute, the option, or 0 (unknown)
  // Rank 3: the shot ids of `shot_ids` beside the dataset, one per shot; empty without.
  std::vector<int64_t> shot_ids;
  std::vector<std::string> notes;   // what an operator should hear of, once
};

struct OpenOptions {
  std::string h5_path = "/data";
  double sample_interval_us = 0;  // used when the dataset has no attribute saying
  // The library's cache of decoded chunks for this file: a chunk that holds traces of
  // several shots is inflated once while its shots are read in turn.
  uint64_t chunk_cache_bytes = 64ull << 20;
};

class Hdf5File {
 public:
  // Opens the file read-only and checks the dataset: rank, type, filters that can be
  // decoded, header columns one value per trace. FAILED_PRECONDITION / INVALID_ARGUMENT
  // naming the file, the object and the reason (the library's own message included).
  static absl::StatusOr<std::unique_ptr<Hdf5File>> Open(const std::string& path,
                                                        const OpenOptions& options = {});
  ~Hdf5File();
  Hdf5File(const Hdf5File&) = delete;
  Hdf5File& operator=(const Hdf5File&) = delete;

  const std::string& path() const { return path_; }
  const Hdf5Layout& layout() const { return layout_; }
  uint64_t size() const { return identity_.size; }
  // Per-trace header columns (by the name of their dataset in `headers`), as float64,
  // n_traces values each, in trace order.
  const std::vector<std::pair<std::string, std::vector<double>>>& header_columns() const {
    return columns_;
  }

  // See FileIdentity::CheckUnchanged.
  absl::Status CheckUnchanged() const { return identity_.CheckUnchanged(path_); }

  // Reads samples [start, start + count) of `n` traces from trace `first` (flat index:
  // shot * traces + trace for rank 3) into dst (n x count float32, converted by the
  // library), one read of the selection: each chunk it touches is read and inflated once.
  absl::Status ReadTraces(uint64_t first, uint64_t n, uint32_t start, uint32_t count,
                          float* dst) const;

 private:
  Hdf5File(std::string path, FileIdentity identity)
      : path_(std::move(path)), identity_(identity) {}
  // Closes the library's handles for good. REQUIRES: the library lock held.
  void RetireLocked();

  std::string path_;
  FileIdentity identity_;
  Hdf5Layout layout_;
  std::vector<std::pair<std::string, std::vector<double>>> columns_;
  int64_t file_ = -1;     // hid_t
  int64_t dataset_ = -1;  // hid_t
  bool retired_ = false;  // handles closed: the file changed under it (under the library lock)
};

}  // namespace shotstream::hdf5

#endif  // SHOTSTREAM_SERVER_HDF5_HDF5_FILE_H_
