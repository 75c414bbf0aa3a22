#include "server/stream/shot_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "server/stream/spread.h"
#include "wire/sample_encoding.h"
#include "wire/sample_kernels.h"

namespace shotstream::stream {
namespace {

float* ChunkSamples(dataset::ShotData* shot, size_t c) {
  return reinterpret_cast<float*>(shot->chunks[c].data());
}

uint32_t ChunkTraces(const dataset::ShotData& shot, size_t c) {
  return c < shot.chunk_traces.size()
             ? shot.chunk_traces[c]
             : static_cast<uint32_t>(shot.chunks[c].size() / sizeof(float) /
                                     std::max(shot.n_samples, 1u));
}

// The bound for ZFP and QUANTIZED (tolerance x the shot's RMS), from one pass over the
// chunks at once, and the shot's largest |sample| (*peak); 0 where the shot holds NaN or
// infinity, or QUANTIZED finds no step.
double Accuracy(dataset::ShotData* shot, wire::Encoding encoding, double tolerance,
                Executor* executor, float* peak_out) {
  std::vector<wire::kernels::SampleStats> stats(shot->chunks.size());
  Spread(executor, stats.size(), [&](size_t c) {
    stats[c] =
        wire::kernels::Stats(ChunkSamples(shot, c), shot->chunks[c].size() / sizeof(float));
  });
  uint32_t peak_bits = 0;
  double sum = 0;
  for (const auto& s : stats) {  // in chunk order: the same RMS whatever ran where
    peak_bits = std::max(peak_bits, s.peak_bits);
    sum += s.sum_squares;
  }
  if (peak_bits >= wire::kernels::kNonFiniteBits) return 0;
  const double n = static_cast<double>(uint64_t{shot->n_traces} * shot->n_samples);
  const double accuracy = wire::LossyAccuracy(tolerance, n > 0 ? std::sqrt(sum / n) : 0);
  float peak;
  std::memcpy(&peak, &peak_bits, 4);
  *peak_out = peak;
  if (encoding == wire::Encoding::kQuantized) {
    if (wire::QuantizedStep(accuracy, peak) == 0) return 0;  // every chunk's peak is lower
  }
  return accuracy;
}

// Whether INT16 keeps every sample of a shot whose largest |sample| is `peak` within
// `accuracy`: its error is at most scale / 2 (scale = max |trace| / 32767) plus the
// float32 roundings of the scaled value and of the decoded product (peak x 2^-22 covers
// both).
bool Int16Within(float peak, double accuracy) {
  return double{peak} / 65534 * (1 + 0x1p-20) + double{peak} * 0x1p-22 <= accuracy;
}

}  // namespace

absl::Status EncodeShot(dataset::ShotData* shot, wire::Encoding encoding, double tolerance,
                        Executor* executor, bool bound_int16) {
  if (encoding != wire::Encoding::kLossless && encoding != wire::Encoding::kInt16 &&
      encoding != wire::Encoding::kZfp && encoding != wire::Encoding::kQuantized) {
    return absl::OkStatus();
  }
  if (shot->is_stored() || shot->encoding != wire::Encoding::kFloat32) {
    return absl::InternalError(absl::StrCat("shot ", shot->shot_id, ": only decoded float32 "
                                            "samples are encoded"));
  }
  double accuracy = 0;
  if (encoding == wire::Encoding::kInt16 && bound_int16) {
    float peak = 0;
    accuracy = Accuracy(shot, encoding, tolerance, executor, &peak);
    if (accuracy == 0) {
      encoding = wire::Encoding::kLossless;  // NaN or infinity
    } else if (!Int16Within(peak, accuracy)) {
      encoding = wire::Encoding::kQuantized;
      if (wire::QuantizedStep(accuracy, peak) == 0) encoding = wire::Encoding::kLossless;
    }
  } else if (encoding == wire::Encoding::kZfp || encoding == wire::Encoding::kQuantized) {
    float peak = 0;
    accuracy = Accuracy(shot, encoding, tolerance, executor, &peak);
    if (accuracy == 0) encoding = wire::Encoding::kLossless;
  }
  const size_t n = shot->chunks.size();
  std::vector<absl::StatusOr<SampleBuffer>> encoded(n);
  auto encode_all = [&](wire::Encoding e, bool keep_float32) {
    Spread(executor, n, [&](size_t c) {
      encoded[c] = wire::EncodeSamples(e, ChunkSamples(shot, c), ChunkTraces(*shot, c),
                                       shot->n_samples, accuracy);
      if (!keep_float32 && encoded[c].ok()) shot->chunks[c] = SampleBuffer();
    });
  };
  // INT16 finds NaN as it encodes, and then the shot goes LOSSLESS from the float32
  // chunks: they stay until the end, unless the RMS pass already looked (bound_int16).
  encode_all(encoding, /*keep_float32=*/encoding == wire::Encoding::kInt16 && !bound_int16);
  if (encoding == wire::Encoding::kInt16 && !bound_int16 &&
      std::any_of(encoded.begin(), encoded.end(), [](const auto& e) {
        return e.status().code() == absl::StatusCode::kFailedPrecondition;
      })) {
    encoding = wire::Encoding::kLossless;  // NaN or infinity somewhere
    encode_all(encoding, /*keep_float32=*/false);
  }
  uint32_t crc = 0;
  std::vector<uint32_t> chunk_crc(n);
  for (size_t c = 0; c < n; ++c) {
    if (!encoded[c].ok()) return encoded[c].status();
    shot->chunks[c] = *std::move(encoded[c]);  // the float32 chunk (INT16's) is freed here
    chunk_crc[c] = Crc32(0, shot->chunks[c].data(), shot->chunks[c].size());
    crc = Crc32Combine(crc, chunk_crc[c], shot->chunks[c].size());
  }
  shot->encoding = encoding;
  if (!wire::IsExact(encoding)) {
    shot->crc32 = crc;
    shot->chunk_crc32 = std::move(chunk_crc);
  }
  return absl::OkStatus();
}

std::vector<float> FirstTraces(const dataset::ShotData& shot, uint32_t max_traces) {
  const uint32_t n = std::min(max_traces, shot.n_traces);
  std::vector<float> out(size_t{n} * shot.n_samples);
  if (n == 0) return out;
  if (shot.is_stored()) {
    for (uint32_t t = 0; t < n; ++t) {
      (void)wire::DecodeSamples(wire::Encoding::kFloat32, 0, shot.big_endian, shot.stored->traces()[t],
                                size_t{shot.n_samples} * 4, 1, shot.n_samples,
                                out.data() + size_t{t} * shot.n_samples);
    }
    return out;
  }
  const SampleBuffer& c = shot.chunks.front();
  const uint32_t in_chunk = shot.chunk_traces.empty() ? n : std::min(n, shot.chunk_traces[0]);
  out.resize(size_t{in_chunk} * shot.n_samples);
  if (shot.encoding == wire::Encoding::kFloat32) {
    std::memcpy(out.data(), c.data(), out.size() * sizeof(float));
  } else if (shot.encoding == wire::Encoding::kNative) {
    const size_t width = wire::NativeBytesPerSample(shot.sample_format);
    (void)wire::DecodeSamples(wire::Encoding::kNative, shot.sample_format, shot.big_endian,
                              c.data(), out.size() * width, in_chunk, shot.n_samples, out.data());
  } else {
    out.clear();
  }
  return out;
}

}  // namespace shotstream::stream
