// The header of a NumPy .npy file (format 1.0, 2.0 and 3.0): its dtype as a SEG-Y
// sample format and byte order, its shape, and where the C-order data starts.
//
// Thread-safe: pure functions over caller-owned bytes.
#ifndef SHOTSTREAM_NPY_NPY_HEADER_H_
#define SHOTSTREAM_NPY_NPY_HEADER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "segy/sample_format.h"

namespace shotstream::npy {

// The most header bytes a .npy file may have here (numpy writes 64- to 128-byte headers;
// 2.0 headers of up to 4 GiB are allowed by the format, but no array needs them).
inline constexpr size_t kMaxHeaderBytes = 65536;

struct NpyHeader {
  std::string descr;  // as written, e.g. "<f4"
  segy::SampleFormat format = segy::SampleFormat::kIeeeFloat32;
  segy::ByteOrder byte_order = segy::ByteOrder::kLittleEndian;
  int bytes_per_sample = 4;
  std::vector<uint64_t> shape;
  uint64_t data_offset = 0;  // the first sample's byte in the file
  uint64_t data_bytes = 0;   // product of shape x bytes_per_sample
};

// Whether `head` begins with the .npy magic string.
bool IsNpy(const uint8_t* head, size_t head_size);

// Parses the header in `head` (the file's first min(file_size, kMaxHeaderBytes) bytes)
// and checks that the file holds exactly the data the shape says: C order, a dtype that
// is a signed or unsigned integer of 1, 2, 4 or 8 bytes or an IEEE float of 4 or 8 bytes,
// either byte order. INVALID_ARGUMENT naming `path`, the byte and the reason otherwise.
absl::StatusOr<NpyHeader> ParseNpyHeader(const std::string& path, const uint8_t* head,
                                         size_t head_size, uint64_t file_size);

// A version 1.0 header (padded to a multiple of 64 bytes, as numpy writes it) for a C-order
// array of `descr` ("<f4", "<f8", "<i2", ...) and `shape`.
std::string FormatNpyHeader(const std::string& descr, const std::vector<uint64_t>& shape);

}  // namespace shotstream::npy

#endif  // SHOTSTREAM_NPY_NPY_HEADER_H_
