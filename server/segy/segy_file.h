// An open file of fixed-length traces: SEG-Y, Seismic Unix, or a NumPy .npy array
// [traces, samples] or [shots, traces, samples] (traces without headers); its layout
// parsed from the file headers, and positioned reads of its bytes.
//
// Thread-safe after Open: reads use pread on a read-only descriptor.
#ifndef SHOTSTREAM_SERVER_SEGY_SEGY_FILE_H_
#define SHOTSTREAM_SERVER_SEGY_SEGY_FILE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "segy/sample_format.h"

namespace shotstream::segy {

inline constexpr int kTextualHeaderBytes = 3200;
inline constexpr int kBinaryHeaderBytes = 400;
inline constexpr int kFileHeaderBytes = kTextualHeaderBytes + kBinaryHeaderBytes;

// Where the traces are and how to decode them.
struct SegyLayout {
  ByteOrder byte_order = ByteOrder::kBigEndian;
  SampleFormat format = SampleFormat::kIeeeFloat32;
  int bytes_per_sample = 4;
  uint32_t n_samples = 0;
  double sample_interval_us = 0;
  int revision_major = 0;
  int extended_textual_headers = 0;  // 3200-byte records after the binary header
  int trace_headers_per_trace = 1;   // 1 + additional 240-byte trace headers
  bool seismic_unix = false;         // no file headers at all
  // A NumPy .npy array: no trace headers (trace_headers_per_trace 0), its shape as stored
  // (the last dimension is the samples).
  bool npy = false;
  std::vector<uint64_t> array_shape;
  uint64_t first_trace_offset = kFileHeaderBytes;
  uint64_t trace_bytes = 0;  // all headers of a trace plus its samples
  uint64_t n_traces = 0;
  // What the reader had to decide that a user should hear of, once (a sample count
  // taken from another header than the binary header's, a revision word read as rev 1).
  std::vector<std::string> notes;

  uint64_t header_bytes() const { return 240ull * trace_headers_per_trace; }
  uint64_t sample_bytes() const { return uint64_t{n_samples} * bytes_per_sample; }
  uint64_t TraceOffset(uint64_t trace) const { return first_trace_offset + trace * trace_bytes; }
};

// How a file's bytes are read.
enum class IoMode {
  kPread,  // positioned reads into a buffer, then decoded: right for any filesystem
  // A read-only memory map, decoded in place: one copy fewer (against pread, alike within
  // the noise: BENCHMARKS.md, "What each setting buys"). Each read first
  // checks the file's current size, and a truncation racing with the read itself is
  // caught (SIGBUS guard), so a shrinking file gives DATA_LOSS either way.
  kMmap,
  // mmap on local filesystems (IsLocalFilesystem), pread elsewhere (NFS, Lustre, GPFS,
  // CephFS, FUSE, SMB...), where a page fault is a synchronous round trip and large
  // positioned reads are the better request.
  kAuto,
};

// "pread", "mmap" or "auto".
absl::StatusOr<IoMode> ParseIoMode(absl::string_view name);

// Whether statfs's f_type names a filesystem on local block devices or memory (ext2/3/4,
// XFS, Btrfs, F2FS, ZFS, tmpfs, overlayfs): IoMode::kAuto maps files there.
bool IsLocalFilesystem(int64_t f_type);

struct OpenOptions {
  // Force a byte order instead of detecting it.
  std::optional<ByteOrder> byte_order;
  IoMode io = IoMode::kPread;
  // The sample interval of files that do not say (.npy); 0: unknown.
  double sample_interval_us = 0;
};

// Open parses the file headers (.npy: by the magic string, whatever the name) (and, for a -1 extended-header count, reads records up to
// ((SEG: EndText))) and checks that the file holds whole traces. Errors name the file,
// the byte and the reason.
class SegyFile {
 public:
  static absl::StatusOr<std::unique_ptr<SegyFile>> Open(const std::string& path,
                                                        const OpenOptions& options = {});
  ~SegyFile();
  SegyFile(const SegyFile&) = delete;
  SegyFile& operator=(const SegyFile&) = delete;

  const std::string& path() const { return path_; }
  const SegyLayout& layout() const { return layout_; }
  uint64_t size() const { return size_; }
  int64_t mtime_ns() const { return mtime_ns_; }

  // OK while the file at path() is the one opened, as it was: same device and inode,
  // size and mtime. Otherwise DATA_LOSS naming the file and what changed (rewritten in
  // place, replaced, truncated, removed). One stat(2).
  absl::Status CheckUnchanged() const;

  // Reads exactly `length` bytes at `offset`, or an error naming the file and offset
  // (DATA_LOSS when the file is shorter than expected, UNAVAILABLE on I/O errors).
  absl::Status ReadAt(uint64_t offset, uint64_t length, uint8_t* dst) const;

  // Whether the file is read through a memory map (IoMode::kMmap, or kAuto on a local
  // filesystem).
  bool mapped() const { return map_ != nullptr; }

  // Mapped files only: calls use() with the `length` bytes at `offset` in place, inside
  // the mapping, after the same size check as ReadAt. DATA_LOSS past the current end, or
  // when the file shrinks while use() reads (the SIGBUS is caught: mapping_guard.h, whose
  // rule applies to use(): it may be left by a jump, so it must own nothing).
  absl::Status ReadMapped(uint64_t offset, uint64_t length,
                          absl::FunctionRef<void(const uint8_t*)> use) const;

  // Mapped files only: the byte offset in the file of `p`, a pointer into the mapping.
  uint64_t MappedOffset(const uint8_t* p) const { return static_cast<uint64_t>(p - map_); }

  // How many ReadAt calls this file has served (for tests and metrics).
  uint64_t read_calls() const { return read_calls_.load(std::memory_order_relaxed); }

 private:
  SegyFile(std::string path, int fd, uint64_t size, int64_t mtime_ns, uint64_t device,
           uint64_t inode)
      : path_(std::move(path)),
        fd_(fd),
        size_(size),
        mtime_ns_(mtime_ns),
        device_(device),
        inode_(inode) {}
  absl::Status ParseLayout(const OpenOptions& options);

  std::string path_;
  int fd_;
  uint64_t size_;
  int64_t mtime_ns_;
  uint64_t device_;
  uint64_t inode_;
  SegyLayout layout_;
  mutable std::atomic<uint64_t> read_calls_{0};
  const uint8_t* map_ = nullptr;  // whole file, when mapped()
  uint64_t map_size_ = 0;
};

// Parses a layout from the first bytes of a file (exposed for tests and fuzzers).
// `head` holds min(file_size, 3600 + 240) bytes.
absl::StatusOr<SegyLayout> ParseSegyHeaders(const std::string& path, const uint8_t* head,
                                            size_t head_size, uint64_t file_size,
                                            const OpenOptions& options);

}  // namespace shotstream::segy

#endif  // SHOTSTREAM_SERVER_SEGY_SEGY_FILE_H_
