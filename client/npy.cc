#include "client/npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "npy/npy_header.h"

namespace shotstream::client {

absl::Status WriteNpy(const std::string& path, const std::string& descr,
                      const std::vector<uint64_t>& shape, const void* data, size_t bytes) {
  const std::string out = npy::FormatNpyHeader(descr, shape);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size() &&
                  std::fwrite(data, 1, bytes, f) == bytes;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace shotstream::client
