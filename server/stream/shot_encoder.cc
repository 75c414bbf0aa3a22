#include "server/stream/shot_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "wire/sample_encoding.h"

namespace shotstream::stream {
namespace {

bool Finite(const dataset::ShotData& shot) {
  for (const SampleBuffer& c : shot.chunks) {
    const float* p = reinterpret_cast<const float*>(c.data());
    for (size_t i = 0; i < c.size() / sizeof(float); ++i) {
      if (!std::isfinite(p[i])) return false;
    }
  }
  return true;
}

double ShotRms(const dataset::ShotData& shot) {
  double sum = 0;
  size_t n = 0;
  for (const SampleBuffer& c : shot.chunks) {
    const size_t k = c.size() / sizeof(float);
    const double rms = wire::Rms(reinterpret_cast<const float*>(c.data()), k);
    sum += rms * rms * static_cast<double>(k);
    n += k;
  }
  return n == 0 ? 0 : std::sqrt(sum / static_cast<double>(n));
}

}  // namespace

absl::Status EncodeShot(dataset::ShotData* shot, wire::Encoding encoding, double tolerance) {
  if (encoding != wire::Encoding::kLossless && encoding != wire::Encoding::kInt16 &&
      encoding != wire::Encoding::kZfp) {
    return absl::OkStatus();
  }
  if (shot->is_stored() || shot->encoding != wire::Encoding::kFloat32) {
    return absl::InternalError(absl::StrCat("shot ", shot->shot_id, ": only decoded float32 "
                                            "samples are encoded"));
  }
  if (encoding != wire::Encoding::kLossless && !Finite(*shot)) encoding = wire::Encoding::kLossless;
  double accuracy = 0;
  if (encoding == wire::Encoding::kZfp) {
    // An all-zero shot still needs a positive accuracy; any serves (zeros are exact).
    accuracy = (tolerance > 0 ? tolerance : wire::kDefaultZfpTolerance) * ShotRms(*shot);
    if (!(accuracy > 0)) accuracy = 1e-30;
  }
  uint32_t crc = 0;
  for (size_t c = 0; c < shot->chunks.size(); ++c) {
    SampleBuffer& chunk = shot->chunks[c];
    const uint32_t n_traces =
        c < shot->chunk_traces.size()
            ? shot->chunk_traces[c]
            : static_cast<uint32_t>(chunk.size() / sizeof(float) / std::max(shot->n_samples, 1u));
    absl::StatusOr<SampleBuffer> encoded = wire::EncodeSamples(
        encoding, reinterpret_cast<const float*>(chunk.data()), n_traces, shot->n_samples,
        accuracy);
    if (!encoded.ok()) return encoded.status();
    chunk = std::move(*encoded);  // the float32 chunk is freed here
    crc = Crc32(crc, chunk.data(), chunk.size());
  }
  shot->encoding = encoding;
  if (!wire::IsExact(encoding)) shot->crc32 = crc;
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
