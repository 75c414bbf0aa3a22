#include "wire/sample_encoding.h"

#include <blosc.h>
#include <zfp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/thread_scratch.h"
#include "segy/sample_format.h"
#include "wire/blosc_frame.h"
#include "wire/sample_kernels.h"

namespace shotstream::wire {
namespace {

// c-blosc with the bit shuffle and LZ4 at level 5: of the settings measured (docs/
// encodings.md, //wire:sample_encoding_benchmark) the fastest, with a ratio within 10% of
// Zstd's at a third of its cost; one internal thread: the reader pool is the parallelism.
// LOSSLESS writes the same frames itself (wire/blosc_frame), with c-blosc's LZ4
// acceleration for level 5 (10 - level); QUANTIZED's go through libblosc.
constexpr char kBloscCompressor[] = "lz4";
constexpr int kBloscLevel = 5;
constexpr int kBloscShuffle = BLOSC_BITSHUFFLE;
constexpr int kLz4Acceleration = 10 - kBloscLevel;

constexpr struct {
  Encoding e;
  absl::string_view name;
} kNames[] = {{Encoding::kFloat32, "float32"}, {Encoding::kNative, "native"},
              {Encoding::kLossless, "lossless"}, {Encoding::kInt16, "int16"},
              {Encoding::kZfp, "zfp"},         {Encoding::kAuto, "auto"},
              {Encoding::kQuantized, "quantized"}};

// QUANTIZED's chunk header: float32 step, uint8 width, three zero bytes.
constexpr size_t kQuantizedHeader = 8;

absl::Status Corrupt(absl::string_view what, const std::string& why) {
  return absl::DataLossError(absl::StrCat(what, " chunk: ", why));
}

bool AllFinite(const float* p, size_t n) {
  return kernels::PeakBits(p, n) < kernels::kNonFiniteBits;
}

absl::StatusOr<SampleBuffer> EncodeLossless(const float* samples, size_t n) {
  SampleBuffer out(BloscFrameBound(n * sizeof(float)));
  out.truncate(WriteBloscFrame(samples, n, kLz4Acceleration, out.data()));
  return out;
}

// Per trace (Int16Trace): its peak (one read, which also finds NaN and infinity), then the
// scaled samples, while the trace is still in cache.
absl::StatusOr<SampleBuffer> EncodeInt16(const float* samples, uint32_t n_traces,
                                         uint32_t n_samples) {
  SampleBuffer out(size_t{n_traces} * sizeof(float) + size_t{n_traces} * n_samples * 2);
  uint8_t* q = out.data() + size_t{n_traces} * sizeof(float);
  for (uint32_t t = 0; t < n_traces; ++t) {
    float scale;
    if (!Int16Trace(samples + size_t{t} * n_samples, n_samples, &scale,
                    q + size_t{t} * n_samples * 2)) {
      return absl::FailedPreconditionError("int16 cannot carry NaN or infinite samples");
    }
    std::memcpy(out.data() + size_t{t} * sizeof(float), &scale, sizeof(float));
  }
  return out;
}

// Scratch of this thread for QUANTIZED's integers.
struct QuantizedIntegers;
uint8_t* Scratch(size_t bytes) { return ThreadScratch<QuantizedIntegers>(bytes); }

absl::StatusOr<SampleBuffer> EncodeQuantized(const float* samples, size_t n, double accuracy) {
  const uint32_t peak_bits = kernels::PeakBits(samples, n);
  if (peak_bits >= kernels::kNonFiniteBits) {
    return absl::FailedPreconditionError("quantized cannot carry NaN or infinite samples");
  }
  float peak;
  std::memcpy(&peak, &peak_bits, 4);
  const float step = QuantizedStep(accuracy, peak);
  if (step == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "quantized: an error bound of ", accuracy, " is below float32's precision at ", peak));
  }
  const float inv = 1.0f / step;
  // The largest zigzag integer: 2 x |q| for the largest |q| (one more for rounding).
  const double z_max = 2.0 * (std::ceil(double{peak} * inv) + 1);
  const int width = z_max < 256 ? 1 : z_max < 65536 ? 2 : 4;
  const size_t bytes = n * width;
  uint8_t* z = Scratch(bytes);
  kernels::Quantize(samples, n, inv, width, z);
  SampleBuffer out(kQuantizedHeader + bytes + BLOSC_MAX_OVERHEAD);
  std::memcpy(out.data(), &step, 4);
  out.data()[4] = static_cast<uint8_t>(width);
  std::memset(out.data() + 5, 0, 3);
  const int size = blosc_compress_ctx(kBloscLevel, kBloscShuffle, width, bytes, z,
                                      out.data() + kQuantizedHeader,
                                      out.size() - kQuantizedHeader, kBloscCompressor,
                                      /*blocksize=*/0, /*numinternalthreads=*/1);
  if (size <= 0) return absl::InternalError(absl::StrCat("blosc_compress_ctx returned ", size));
  out.truncate(kQuantizedHeader + static_cast<size_t>(size));
  return out;
}

absl::Status DecodeQuantized(const uint8_t* payload, size_t size, size_t n, float* dst) {
  if (size < kQuantizedHeader + BLOSC_MIN_HEADER_LENGTH) {
    return Corrupt("quantized", absl::StrCat(size, " bytes: shorter than its headers"));
  }
  float step;
  std::memcpy(&step, payload, 4);
  const int width = payload[4];
  if (!(std::isfinite(step) && step > 0) || (width != 1 && width != 2 && width != 4) ||
      payload[5] != 0 || payload[6] != 0 || payload[7] != 0) {
    return Corrupt("quantized", absl::StrCat("a header of step ", step, " and width ", width));
  }
  const uint8_t* frame = payload + kQuantizedHeader;
  size_t nbytes = 0, cbytes = 0, blocksize = 0;
  blosc_cbuffer_sizes(frame, &nbytes, &cbytes, &blocksize);
  if (nbytes != n * width || cbytes != size - kQuantizedHeader) {
    return Corrupt("quantized", absl::StrCat("blosc frame of ", cbytes, " bytes holding ", nbytes,
                                             " where ", size - kQuantizedHeader, " holding ",
                                             n * width, " were sent"));
  }
  if (n == 0) return absl::OkStatus();
  uint8_t* z = Scratch(nbytes);
  const int got = blosc_decompress_ctx(frame, z, nbytes, 1);
  if (got != static_cast<int>(nbytes)) {
    return Corrupt("quantized", absl::StrCat("blosc_decompress_ctx returned ", got));
  }
  kernels::Dequantize(z, n, width, step, dst);
  return absl::OkStatus();
}

struct ZfpStream {
  zfp_stream* zfp = zfp_stream_open(nullptr);
  zfp_field* field = zfp_field_alloc();
  bitstream* bits = nullptr;
  ~ZfpStream() {
    if (bits != nullptr) stream_close(bits);
    zfp_field_free(field);
    zfp_stream_close(zfp);
  }
};

absl::StatusOr<SampleBuffer> EncodeZfp(const float* samples, uint32_t n_traces,
                                       uint32_t n_samples, double accuracy) {
  ZfpStream z;
  zfp_field_set_type(z.field, zfp_type_float);
  zfp_field_set_pointer(z.field, const_cast<float*>(samples));
  zfp_field_set_size_2d(z.field, n_samples, n_traces);  // x (fastest): samples of a trace
  zfp_stream_set_accuracy(z.zfp, accuracy);
  SampleBuffer out(zfp_stream_maximum_size(z.zfp, z.field) + 64);
  z.bits = stream_open(out.data(), out.size());
  zfp_stream_set_bit_stream(z.zfp, z.bits);
  zfp_stream_rewind(z.zfp);
  if (zfp_write_header(z.zfp, z.field, ZFP_HEADER_FULL) == 0 ||
      zfp_compress(z.zfp, z.field) == 0) {
    return absl::InternalError("zfp_compress failed");
  }
  zfp_stream_flush(z.zfp);
  out.truncate(zfp_stream_compressed_size(z.zfp));
  return out;
}

absl::Status DecodeZfp(const uint8_t* payload, size_t size, uint32_t n_traces,
                       uint32_t n_samples, float* dst) {
  ZfpStream z;
  z.bits = stream_open(const_cast<uint8_t*>(payload), size);
  zfp_stream_set_bit_stream(z.zfp, z.bits);
  zfp_stream_rewind(z.zfp);
  if (zfp_read_header(z.zfp, z.field, ZFP_HEADER_FULL) == 0) {
    return Corrupt("zfp", "no valid ZFP header");
  }
  if (z.field->type != zfp_type_float || z.field->nx != n_samples || z.field->ny != n_traces ||
      z.field->nz != 0) {
    return Corrupt("zfp", absl::StrCat("the stream holds a ", z.field->nx, " x ", z.field->ny,
                                       " field of zfp type ", z.field->type, ", not ",
                                       n_samples, " x ", n_traces, " float"));
  }
  zfp_field_set_pointer(z.field, dst);
  if (zfp_stream_maximum_size(z.zfp, z.field) == 0 || zfp_decompress(z.zfp, z.field) == 0 ||
      zfp_stream_compressed_size(z.zfp) > size) {
    return Corrupt("zfp", absl::StrCat("the stream of ", size, " bytes is truncated"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view EncodingName(Encoding e) {
  for (const auto& n : kNames) {
    if (n.e == e) return n.name;
  }
  return "unknown";
}

absl::StatusOr<Encoding> EncodingFromName(absl::string_view name) {
  for (const auto& n : kNames) {
    if (n.name == name) return n.e;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "encoding '", name,
      "' is not one of float32, native, lossless, int16, zfp, quantized, auto"));
}

int NativeBytesPerSample(int format) {
  switch (format) {
    case 1: case 2: case 3: case 7: case 8: case 10: case 11: case 15: case 16:
      return segy::BytesPerSample(format);
    default:
      return 0;
  }
}

double Rms(const float* samples, size_t n) {
  if (n == 0) return 0;
  return std::sqrt(kernels::Stats(samples, n).sum_squares / static_cast<double>(n));
}

double LossyAccuracy(double tolerance, double rms) {
  const double accuracy = (tolerance > 0 ? tolerance : kDefaultZfpTolerance) * rms;
  return accuracy > 0 ? accuracy : 1e-30;
}

float QuantizedStep(double accuracy, float peak) {
  // Encoding rounds x * (1 / step) to an integer q, decoding computes float(q) * step, all
  // in float32: |error| <= step / 2 x (1 + 2^-24) + peak x 1.5 x 2^-23 (the inverse, the
  // product and the decoded value each rounded once). The step leaves that margin.
  const double margin = double{peak} * 0x1p-22;
  const double step = 2.0 * (accuracy - margin) * (1.0 - 0x1p-20);
  if (!(step > 0) || !std::isfinite(step)) return 0;
  float s = static_cast<float>(step);
  if (double{s} > step) s = std::nextafter(s, 0.0f);  // rounded down, never up
  // |q| stays below 2^21: float32 holds every integer there, and the kernels round it.
  if (!std::isnormal(s) || double{peak} / s >= 0x1p21) return 0;
  return s;
}

bool Int16Trace(const float* samples, uint32_t n, float* scale_out, uint8_t* dst) {
  const uint32_t peak_bits = kernels::PeakBits(samples, n);
  if (peak_bits >= kernels::kNonFiniteBits) return false;
  float peak;
  std::memcpy(&peak, &peak_bits, 4);
  // A trace whose scale would be denormal (peak below 32767 x FLT_MIN, 3.8e-34) goes as
  // zeros: 1 / scale would overflow.
  float scale = peak / 32767.0f;
  if (!(scale >= std::numeric_limits<float>::min())) scale = 0;
  if (scale == 0) {
    std::memset(dst, 0, size_t{n} * 2);
  } else {
    kernels::ScaleToInt16(samples, n, 1.0f / scale, dst);
  }
  *scale_out = scale;
  return true;
}

absl::StatusOr<SampleBuffer> EncodeSamples(Encoding e, const float* samples, uint32_t n_traces,
                                           uint32_t n_samples, double zfp_accuracy) {
  const size_t n = size_t{n_traces} * n_samples;
  switch (e) {
    case Encoding::kLossless:
      return EncodeLossless(samples, n);
    case Encoding::kInt16:
      return EncodeInt16(samples, n_traces, n_samples);
    case Encoding::kZfp:
      if (!AllFinite(samples, n)) {
        return absl::FailedPreconditionError("zfp cannot carry NaN or infinite samples");
      }
      if (n == 0) return SampleBuffer();
      return EncodeZfp(samples, n_traces, n_samples, zfp_accuracy);
    case Encoding::kQuantized:
      return EncodeQuantized(samples, n, zfp_accuracy);
    default:
      return absl::InternalError(absl::StrCat("EncodeSamples: ", EncodingName(e),
                                              " is not encoded from float32"));
  }
}

absl::Status DecodeSamples(Encoding e, int sample_format, bool big_endian, const uint8_t* payload,
                           size_t size, uint32_t n_traces, uint32_t n_samples, float* dst) {
  const size_t n = size_t{n_traces} * n_samples;
  const segy::ByteOrder order =
      big_endian ? segy::ByteOrder::kBigEndian : segy::ByteOrder::kLittleEndian;
  switch (e) {
    case Encoding::kFloat32:
    case Encoding::kNative: {
      const int width = e == Encoding::kFloat32 ? 4 : NativeBytesPerSample(sample_format);
      if (width == 0) {
        return Corrupt("native", absl::StrCat("sample format ", sample_format,
                                              " is not sent natively"));
      }
      if (size != n * width) {
        return Corrupt(EncodingName(e), absl::StrCat(size, " bytes for ", n_traces, " traces of ",
                                                     n_samples, " samples of ", width, " bytes"));
      }
      const auto format = e == Encoding::kFloat32 ? segy::SampleFormat::kIeeeFloat32
                                                  : static_cast<segy::SampleFormat>(sample_format);
      segy::DecodeSamples(payload, n, format, order, dst);
      return absl::OkStatus();
    }
    case Encoding::kLossless:
      return ReadBloscFrame(payload, size, n, dst);
    case Encoding::kInt16: {
      if (size != size_t{n_traces} * 4 + n * 2) {
        return Corrupt("int16", absl::StrCat(size, " bytes for ", n_traces, " traces of ",
                                             n_samples, " samples"));
      }
      const uint8_t* q = payload + size_t{n_traces} * 4;
      for (uint32_t t = 0; t < n_traces; ++t) {
        float scale;
        std::memcpy(&scale, payload + size_t{t} * 4, 4);
        kernels::Int16ToFloat(q + size_t{t} * n_samples * 2, n_samples, scale,
                              dst + size_t{t} * n_samples);
      }
      return absl::OkStatus();
    }
    case Encoding::kQuantized:
      return DecodeQuantized(payload, size, n, dst);
    case Encoding::kZfp:
      if (n == 0) {
        return size == 0 ? absl::OkStatus() : Corrupt("zfp", "bytes for no samples");
      }
      return DecodeZfp(payload, size, n_traces, n_samples, dst);
    default:
      return Corrupt("unknown", absl::StrCat("encoding ", static_cast<int>(e)));
  }
}

}  // namespace shotstream::wire
