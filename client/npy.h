// Writes NumPy .npy files (format 1.0): float32 and float64 arrays, C order; reads them
// back (any dtype npy/npy_header serves) as float32 samples or float64 values.
#ifndef SHOTSTREAM_CLIENT_NPY_H_
#define SHOTSTREAM_CLIENT_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shotstream::client {

// `descr` is "<f4" or "<f8"; `data` holds the product of `shape` elements.
absl::Status WriteNpy(const std::string& path, const std::string& descr,
                      const std::vector<uint64_t>& shape, const void* data, size_t bytes);

// A whole .npy file: its shape and its values converted (floats as numpy's astype does;
// integers exactly into float64).
struct NpyArray {
  std::vector<uint64_t> shape;
  std::vector<float> floats;    // ReadNpy(..., as_double = false)
  std::vector<double> doubles;  // ReadNpy(..., as_double = true)
};
// INVALID_ARGUMENT naming the file and the reason for files it cannot read.
absl::StatusOr<NpyArray> ReadNpy(const std::string& path, bool as_double);

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_NPY_H_
