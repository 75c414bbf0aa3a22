#include "client/testdata/golden_chunks.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/crc32.h"
#include "common/sample_buffer.h"
#include "common/status_macros.h"
#include "segy/sample_format.h"
#include "wire/chunk_codec.h"
#include "wire/chunk_plan.h"
#include "wire/sample_encoding.h"

namespace shotstream::golden {
namespace {

constexpr double kTolerance = 1e-3;  // QUANTIZED and ZFP: x the shot's RMS

// Each trace's raw header: bytes (trace * 240 + i) mod 251.
std::string TraceHeaders(uint32_t n_traces) {
  std::string out(size_t{n_traces} * 240, '\0');
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i % 251);
  return out;
}

std::vector<float> Originals(const GoldenShot& g) {
  std::vector<float> v(size_t{g.n_traces} * g.n_samples);
  for (uint32_t t = 0; t < g.n_traces; ++t) {
    for (uint32_t s = 0; s < g.n_samples; ++s) {
      v[size_t{t} * g.n_samples + s] = GoldenSample(g.shot_id, t, s, g.divisor);
    }
  }
  return v;
}

// The chunk's payload and the CRC-32 it carries (chunk_plan.h's rule).
absl::Status Payload(const GoldenShot& g, const float* samples, uint32_t traces,
                     double accuracy, SampleBuffer* payload, uint32_t* crc) {
  const size_t n = size_t{traces} * g.n_samples;
  const uint32_t float32_crc = Crc32(0, samples, n * sizeof(float));
  switch (g.encoding) {
    case wire::Encoding::kFloat32: {
      *payload = SampleBuffer(n * sizeof(float));
      if (g.big_endian) {
        segy::EncodeSamplesBigEndian(samples, n, segy::SampleFormat::kIeeeFloat32,
                                     payload->data());
      } else if (n > 0) {
        std::copy_n(reinterpret_cast<const uint8_t*>(samples), n * sizeof(float),
                    payload->data());
      }
      // FLOAT32's CRC-32 is of the bytes as sent (the client checks it as it copies).
      *crc = Crc32(0, payload->data(), payload->size());
      return absl::OkStatus();
    }
    case wire::Encoding::kNative: {
      if (g.sample_format == 3) {
        *payload = SampleBuffer(n * 2);
        for (size_t i = 0; i < n; ++i) {
          const auto v = static_cast<uint16_t>(static_cast<int16_t>(samples[i]));
          payload->data()[2 * i] = static_cast<uint8_t>(v >> 8);
          payload->data()[2 * i + 1] = static_cast<uint8_t>(v);
        }
      } else {
        *payload = SampleBuffer(n * 4);
        segy::EncodeSamplesBigEndian(samples, n, segy::SampleFormat::kIbmFloat32,
                                     payload->data());
      }
      *crc = float32_crc;
      return absl::OkStatus();
    }
    default: {
      SS_ASSIGN_OR_RETURN(*payload, wire::EncodeSamples(g.encoding, samples, traces,
                                                        g.n_samples, accuracy));
      *crc = wire::IsExact(g.encoding) ? float32_crc
                                       : Crc32(0, payload->data(), payload->size());
      return absl::OkStatus();
    }
  }
}

std::string Bytes(grpc::ByteBuffer bb) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!bb.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

}  // namespace

float GoldenSample(int64_t shot_id, uint32_t trace, uint32_t sample, int divisor) {
  const int64_t k = (int64_t{trace} * 131 + int64_t{sample} * 17 + shot_id * 7) % 2001 - 1000;
  return static_cast<float>(k) / static_cast<float>(divisor);
}

std::vector<GoldenShot> GoldenShots() {
  using E = wire::Encoding;
  return {
      {101, E::kFloat32, 0, false, 7, 50, 3, 8, 0},
      {102, E::kNative, 3, true, 5, 40, 2, 1, 0},  // int16: integral samples
      {103, E::kNative, 1, true, 4, 30, 4, 8, 0},
      {104, E::kLossless, 0, false, 6, 64, 4, 8, 0},
      {105, E::kInt16, 0, false, 6, 64, 3, 8, 125.0 / 32767 * 1.0001},
      {106, E::kQuantized, 0, false, 6, 64, 2, 8, -1},  // bounds set below (x RMS)
      {107, E::kZfp, 0, false, 6, 64, 6, 8, -1},
      {108, E::kFloat32, 0, false, 0, 50, 3, 8, 0},  // a shot whose traces were all filtered
      {109, E::kFloat32, 0, true, 3, 20, 2, 8, 0},   // big-endian IEEE, sent as stored
  };
}

absl::StatusOr<std::vector<std::string>> MakeGoldenChunks() {
  std::vector<std::string> out;
  const std::vector<GoldenShot> shots = GoldenShots();
  for (size_t index = 0; index < shots.size(); ++index) {
    const GoldenShot& g = shots[index];
    const std::vector<float> samples = Originals(g);
    const double accuracy = kTolerance * wire::Rms(samples.data(), samples.size());
    wire::ShotFrame frame;
    frame.index = static_cast<uint32_t>(index);
    frame.shot_id = g.shot_id;
    frame.n_traces = g.n_traces;
    frame.n_samples = g.n_samples;
    frame.sample_interval_us = 2000;
    frame.encoding = g.encoding;
    frame.sample_format = g.sample_format;
    frame.big_endian = g.big_endian;
    uint32_t shot_crc = 0;
    uint32_t first = 0;
    do {
      const uint32_t traces = std::min(g.traces_per_chunk, g.n_traces - first);
      const bool last = first + traces == g.n_traces;
      v1::ShotChunk meta;
      wire::PlanChunk(frame, first, traces, last, &meta);
      if (first == 0) {
        v1::HeaderColumn* offset = meta.add_headers();
        offset->set_name("offset");
        for (uint32_t t = 0; t < g.n_traces; ++t) offset->add_values(100 + 12.5 * t);
        meta.set_trace_headers(TraceHeaders(g.n_traces));
      }
      SampleBuffer payload;
      uint32_t crc = 0;
      SS_RETURN_IF_ERROR(Payload(g, samples.data() + size_t{first} * g.n_samples, traces,
                                 accuracy, &payload, &crc));
      meta.set_chunk_crc32(crc);
      shot_crc = Crc32Combine(shot_crc, crc,
                              wire::CrcCoveredBytes(g.encoding, traces, g.n_samples,
                                                    payload.size()));
      if (last) meta.set_crc32(shot_crc);
      out.push_back(Bytes(wire::EncodeShotChunk(meta, std::move(payload))));
      first += traces;
    } while (first < g.n_traces);
  }
  return out;
}

std::string GoldenShotList() {
  std::string out =
      "# The golden chunk stream's shots (golden_chunks.bin; client/testdata/golden_chunks.h):\n"
      "# shot_id encoding n_traces n_samples divisor bound. Sample (t, s) of shot i is\n"
      "# ((t * 131 + s * 17 + i * 7) mod 2001 - 1000) / divisor; bound: the largest\n"
      "# |decoded - original| allowed (0: exact). Each shot's first\n"
      "# chunk carries the header column offset = 100 + 12.5 t and raw trace headers whose\n"
      "# byte j (over the shot's) is j mod 251.\n";
  for (const GoldenShot& g : GoldenShots()) {
    std::vector<float> samples = Originals(g);
    double bound = g.bound;
    if (bound < 0) bound = kTolerance * wire::Rms(samples.data(), samples.size());
    absl::StrAppendFormat(&out, "%d %s %u %u %d %.9g\n", g.shot_id,
                          wire::EncodingName(g.encoding), g.n_traces, g.n_samples, g.divisor,
                          bound);
  }
  return out;
}

}  // namespace shotstream::golden
