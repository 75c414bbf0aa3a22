#include "client/npy.h"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "npy/npy_header.h"
#include "segy/sample_format.h"

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

absl::StatusOr<NpyArray> ReadNpy(const std::string& path, bool as_double) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  std::string head(std::min<uint64_t>(size, npy::kMaxHeaderBytes), '\0');
  in.seekg(0);
  if (!in.read(&head[0], static_cast<std::streamsize>(head.size()))) {
    return absl::DataLossError(absl::StrCat(path, ": read failed"));
  }
  auto h = npy::ParseNpyHeader(path, reinterpret_cast<const uint8_t*>(head.data()), head.size(),
                               size);
  if (!h.ok()) return h.status();
  const size_t n = h->data_bytes / h->bytes_per_sample;
  in.seekg(static_cast<std::streamoff>(h->data_offset));
  if (!as_double && h->format == segy::SampleFormat::kIeeeFloat32 &&
      h->byte_order == segy::ByteOrder::kLittleEndian) {  // as stored: read in place
    NpyArray a;
    a.shape = h->shape;
    a.floats.resize(n);
    if (!in.read(reinterpret_cast<char*>(a.floats.data()),
                 static_cast<std::streamsize>(h->data_bytes))) {
      return absl::DataLossError(absl::StrCat(path, ": read failed"));
    }
    return a;
  }
  std::string bytes(h->data_bytes, '\0');
  if (!in.read(&bytes[0], static_cast<std::streamsize>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat(path, ": read failed"));
  }
  const uint8_t* src = reinterpret_cast<const uint8_t*>(bytes.data());
  NpyArray a;
  a.shape = h->shape;
  using F = segy::SampleFormat;
  if (!as_double) {
    a.floats.resize(n);
    segy::DecodeSamples(src, n, h->format, h->byte_order, a.floats.data());
    return a;
  }
  a.doubles.resize(n);
  const bool swap = h->byte_order == segy::ByteOrder::kBigEndian;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = src + i * h->bytes_per_sample;
    uint64_t bits = 0;
    for (int k = 0; k < h->bytes_per_sample; ++k) {
      const int at = swap ? h->bytes_per_sample - 1 - k : k;
      bits |= uint64_t{p[at]} << (8 * k);
    }
    const int w = h->bytes_per_sample * 8;
    const bool is_signed = h->format == F::kInt8 || h->format == F::kInt16 ||
                           h->format == F::kInt32 || h->format == F::kInt64;
    double v;
    if (h->format == F::kIeeeFloat64) {
      std::memcpy(&v, &bits, 8);
    } else if (h->format == F::kIeeeFloat32) {
      float f;
      const uint32_t b32 = static_cast<uint32_t>(bits);
      std::memcpy(&f, &b32, 4);
      v = f;
    } else if (is_signed) {
      const int64_t x = w == 64 ? static_cast<int64_t>(bits)
                                : static_cast<int64_t>(bits << (64 - w)) >> (64 - w);
      v = static_cast<double>(x);
    } else {
      v = static_cast<double>(bits);
    }
    a.doubles[i] = v;
  }
  return a;
}

}  // namespace shotstream::client
