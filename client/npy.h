// Writes NumPy .npy files (format 1.0): float32 and float64 arrays, C order.
#ifndef SHOTSTREAM_CLIENT_NPY_H_
#define SHOTSTREAM_CLIENT_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shotstream::client {

// `descr` is "<f4" or "<f8"; `data` holds the product of `shape` elements.
absl::Status WriteNpy(const std::string& path, const std::string& descr,
                      const std::vector<uint64_t>& shape, const void* data, size_t bytes);

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_NPY_H_
