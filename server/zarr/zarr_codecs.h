// Zarr data types and codecs: parsing them from v2 and v3 metadata (JSON text), and
// decoding one chunk's stored bytes into its elements (C order, little-endian).
//
// v3 codecs: bytes (endian), transpose, blosc, zstd, gzip, crc32c, sharding_indexed (the
// index and the inner chain), numcodecs.zfpy; v2 compressors blosc, zstd, gzip, zlib,
// lz4 and zfpy, order "C"/"F", no filters. Libraries: c-blosc, libzstd, zlib, liblz4,
// libzfp; CRC-32C by ISA-L. Anything else is refused by name when the array is opened.
//
// Thread-safe: pure functions; every decoder keeps its state on the stack.
#ifndef SHOTSTREAM_SERVER_ZARR_ZARR_CODECS_H_
#define SHOTSTREAM_SERVER_ZARR_ZARR_CODECS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace shotstream::zarr {

// An allocator that leaves new elements uninitialised: a chunk's buffers are always
// written whole by the decoder, and zero-filling them first cost a tenth of the server's
// time on Blosc stores (perf).
template <typename T>
struct NoInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <typename U>
  NoInitAllocator(const NoInitAllocator<U>&) {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// A chunk's bytes (stored or decoded).
using ChunkBytes = std::vector<uint8_t, NoInitAllocator<uint8_t>>;

enum class ScalarKind { kBool, kInt, kUInt, kFloat };

struct Scalar {
  ScalarKind kind = ScalarKind::kFloat;
  int size = 4;  // bytes: 1, 2, 4, 8
  bool big_endian = false;  // as stored (v2 '>'); decoded chunks are little-endian
};

// An array's element: a scalar, or a structured record of named scalars (MDIO headers).
struct DataType {
  Scalar scalar;
  struct Field {
    std::string name;
    Scalar type;
    size_t offset = 0;
  };
  std::vector<Field> fields;  // structured: not empty
  size_t size = 4;            // bytes per element
  std::string name;           // as the metadata says it: "float32", "<i2", ...
};

// One step of a chunk's encoding, v3 names (v2's compressor and order are mapped onto
// them). Encoding order; decoding runs them backwards.
struct Codec {
  std::string name;  // bytes, transpose, blosc, zstd, gzip, zlib, lz4, crc32c, zfpy
  bool big_endian = false;  // bytes
  std::vector<int> order;   // transpose: encoded axis i is decoded axis order[i]
  std::string label;        // "blosc(lz4, shuffle)": for Describe
};

// Parses a v2 `dtype` (JSON: "<f4", or [["name", "<i4"], ...]) or a v3 `data_type`
// ("float32", or {"name": "structured"/"struct", "configuration": {...}}).
absl::StatusOr<DataType> ParseDataType(const std::string& json, int zarr_format);

// One element's fill value from JSON (number, "NaN", "Infinity", "0x..." hex, base64 for
// records, null: zeros), little-endian.
absl::StatusOr<std::vector<uint8_t>> ParseFillValue(const std::string& json, const DataType& t,
                                                    int zarr_format);

// A v3 codec's JSON, or a v2 compressor's; INVALID_ARGUMENT naming what is not supported.
absl::StatusOr<Codec> ParseV3Codec(const std::string& json);
absl::StatusOr<Codec> ParseV2Compressor(const std::string& json);

// Decodes the stored bytes of one chunk of `shape` (C order) and `type` through `codecs`
// (encoding order): the chunk's elements, little-endian, C order. DATA_LOSS for bytes
// that do not decode (a wrong size, a CRC-32C mismatch, a codec's own error).
absl::StatusOr<ChunkBytes> DecodeChunk(ChunkBytes stored,
                                                 absl::Span<const Codec> codecs,
                                                 absl::Span<const uint64_t> shape,
                                                 const DataType& type);

// CRC-32C (Castagnoli), as the crc32c codec stores it.
uint32_t Crc32c(const uint8_t* data, size_t size);

// The value of one scalar element (little-endian) as a double.
double ScalarValue(const uint8_t* p, const Scalar& s);

// Converts `n` little-endian elements of scalar type `s` to float32.
void ToFloat32(const uint8_t* src, const Scalar& s, size_t n, float* dst);

}  // namespace shotstream::zarr

#endif  // SHOTSTREAM_SERVER_ZARR_ZARR_CODECS_H_
