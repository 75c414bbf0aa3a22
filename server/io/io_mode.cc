#include "server/io/io_mode.h"

#include "absl/strings/str_cat.h"

namespace shotstream::io {

absl::StatusOr<IoMode> ParseIoMode(absl::string_view name) {
  if (name == "pread") return IoMode::kPread;
  if (name == "mmap") return IoMode::kMmap;
  if (name == "auto") return IoMode::kAuto;
  return absl::InvalidArgumentError(
      absl::StrCat("io '", name, "': expected auto, pread or mmap"));
}

bool IsLocalFilesystem(int64_t f_type) {
  switch (static_cast<uint32_t>(f_type)) {  // magic numbers of linux/magic.h
    case 0xEF53:      // ext2, ext3, ext4
    case 0x58465342:  // XFS
    case 0x9123683E:  // Btrfs
    case 0xF2F52010:  // F2FS
    case 0x2FC12FC1:  // ZFS
    case 0x01021994:  // tmpfs
    case 0x794C7630:  // overlayfs (containers)
      return true;
    default:
      return false;
  }
}

}  // namespace shotstream::io
