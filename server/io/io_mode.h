// IoMode: how a server reads a dataset's files (pread or a memory map), by its setting's
// name. Thread-safe: pure functions.
#ifndef SHOTSTREAM_SERVER_IO_IO_MODE_H_
#define SHOTSTREAM_SERVER_IO_IO_MODE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shotstream::io {

// How a file's bytes are read.
enum class IoMode {
  kPread,  // positioned reads into a buffer, then decoded: right for any filesystem
  // A read-only memory map, decoded in place: one copy fewer (against pread, alike within
  // the noise: BENCHMARKS.md, "What each setting buys"). Each read first checks the
  // file's current size, and a truncation racing with the read itself is caught (SIGBUS
  // guard), so a shrinking file gives DATA_LOSS either way.
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

}  // namespace shotstream::io

#endif  // SHOTSTREAM_SERVER_IO_IO_MODE_H_
