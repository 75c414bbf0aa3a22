#include "server/stream/shot_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "common/status_macros.h"
#include "segy/sample_format.h"
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

// tolerance x the shot's RMS, from its chunks' statistics joined in chunk order (the same
// RMS whatever ran where), and the shot's largest |sample| (*peak); 0 where the shot holds
// NaN or infinity.
double ShotAccuracy(const dataset::ShotData& shot,
                    const std::vector<wire::kernels::SampleStats>& stats, double tolerance,
                    float* peak_out) {
  uint32_t peak_bits = 0;
  double sum = 0;
  for (const auto& s : stats) {
    peak_bits = std::max(peak_bits, s.peak_bits);
    sum += s.sum_squares;
  }
  if (peak_bits >= wire::kernels::kNonFiniteBits) return 0;
  const double n = static_cast<double>(uint64_t{shot.n_traces} * shot.n_samples);
  std::memcpy(peak_out, &peak_bits, 4);
  return wire::LossyAccuracy(tolerance, n > 0 ? std::sqrt(sum / n) : 0);
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
  const double accuracy = ShotAccuracy(*shot, stats, tolerance, peak_out);
  if (accuracy == 0) return 0;
  const float peak = *peak_out;
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

// A stored (located) shot's traces made into chunks of traces_per_chunk traces:
// fill(first, n, out) writes the chunk of traces [first, first + n) to `out`
// (bytes_per_trace a trace) and returns its CRC-32, chunks at once on the executor's
// threads. The first error in chunk order, if any.
struct StoredChunks {
  std::vector<SampleBuffer> chunks;
  std::vector<uint32_t> traces;
  std::vector<uint32_t> crc;
};
template <typename Fill>
absl::StatusOr<StoredChunks> ChunksOfStored(const dataset::ShotData& shot,
                                            size_t bytes_per_trace, Executor* executor,
                                            const Fill& fill) {
  const size_t n_traces = shot.stored->size();
  const size_t per = std::max<uint32_t>(shot.traces_per_chunk, 1);
  const size_t n = shot.n_chunks();
  StoredChunks out;
  out.chunks.resize(n);
  std::vector<absl::StatusOr<uint32_t>> crc(n);
  Spread(executor, n, [&](size_t c) {
    const size_t first = c * per;
    const size_t k = std::min(per, n_traces - first);
    out.chunks[c] = SampleBuffer(k * bytes_per_trace);
    crc[c] = fill(first, k, out.chunks[c].data());
  });
  for (size_t c = 0; c < n; ++c) {
    if (!crc[c].ok()) return crc[c].status();
    out.traces.push_back(static_cast<uint32_t>(std::min(per, n_traces - c * per)));
    out.crc.push_back(*crc[c]);
  }
  return out;
}

// The shot's samples are now `chunks` (little-endian), no longer stored.
void TakeChunks(StoredChunks chunks, dataset::ShotData* shot) {
  shot->crc32 = 0;
  for (size_t c = 0; c < chunks.chunks.size(); ++c) {
    shot->crc32 = Crc32Combine(shot->crc32, chunks.crc[c], chunks.chunks[c].size());
  }
  shot->chunks = std::move(chunks.chunks);
  shot->chunk_traces = std::move(chunks.traces);
  shot->chunk_crc32 = std::move(chunks.crc);
  shot->stored.reset();
  shot->big_endian = false;
}

// The byte order of stored float32 traces.
segy::ByteOrder OrderOf(const io::StoredTraces& stored) {
  return stored.big_endian() ? segy::ByteOrder::kBigEndian : segy::ByteOrder::kLittleEndian;
}

// Stored traces [first, first + n) decoded to float32 at `out`, and its CRC-32. (The
// visits call only kernels that own nothing: a vanished mapping may leave them by a jump.)
absl::StatusOr<uint32_t> DecodeStored(const io::StoredTraces& stored, uint32_t n_samples,
                                      size_t first, size_t n, uint8_t* out) {
  const size_t bytes = size_t{n_samples} * sizeof(float);
  const segy::ByteOrder order = OrderOf(stored);
  SS_RETURN_IF_ERROR(stored.Visit(first, n, [&](size_t i, const uint8_t* p) {
    segy::DecodeSamples(p, n_samples, segy::SampleFormat::kIeeeFloat32, order,
                        reinterpret_cast<float*>(out + (i - first) * bytes));
  }));
  return Crc32(0, out, n * bytes);
}

// INT16's chunk of stored traces [first, first + n) at `out`, and its CRC-32, with no
// float32 shot in between: each trace decoded into this thread's scratch (in L1), then its
// peak, its scaled samples and their CRC-32 while they are in cache. NaN or infinity in a
// trace: FAILED_PRECONDITION, as EncodeSamples says it. With `stats`, the chunk's largest
// |sample| and sum of squares too (trace by trace, in order), for a tolerance's bound.
absl::StatusOr<uint32_t> Int16OfStored(const io::StoredTraces& stored, uint32_t n_samples,
                                       size_t first, size_t n, uint8_t* out,
                                       wire::kernels::SampleStats* stats) {
  thread_local std::vector<float> trace;
  trace.resize(n_samples);  // before the visit, whose use must own nothing
  float* scratch = trace.data();
  uint8_t* q = out + n * sizeof(float);
  const size_t q_bytes = size_t{n_samples} * 2;
  const segy::ByteOrder order = OrderOf(stored);
  uint32_t crc = 0;
  bool finite = true;
  wire::kernels::SampleStats sum;
  SS_RETURN_IF_ERROR(stored.Visit(first, n, [&](size_t i, const uint8_t* p) {
    if (!finite) return;
    segy::DecodeSamples(p, n_samples, segy::SampleFormat::kIeeeFloat32, order, scratch);
    if (stats != nullptr) {
      const wire::kernels::SampleStats s = wire::kernels::Stats(scratch, n_samples);
      sum.peak_bits = std::max(sum.peak_bits, s.peak_bits);
      sum.sum_squares += s.sum_squares;
    }
    float scale;
    uint8_t* dst = q + (i - first) * q_bytes;
    finite = wire::Int16Trace(scratch, n_samples, &scale, dst);
    std::memcpy(out + (i - first) * sizeof(float), &scale, sizeof(float));
    crc = Crc32(crc, dst, q_bytes);
  }));
  if (!finite) return absl::FailedPreconditionError("int16 cannot carry NaN or infinite samples");
  if (stats != nullptr) *stats = sum;
  // The chunk is its scales, then its samples.
  return Crc32Combine(Crc32(0, out, n * sizeof(float)), crc, n * q_bytes);
}

// A stored shot sent INT16 (the one encoding a stream reads stored traces for): encoded
// from the mapping (true). Where a trace holds NaN or infinity (*encoding becomes
// LOSSLESS), or (`bound`: INT16 that `auto` picked under a tolerance) the shot's largest
// sample / 65534 exceeds tolerance x its RMS, decoded to float32 chunks instead for the
// caller to encode (false).
absl::StatusOr<bool> EncodeStored(dataset::ShotData* shot, Executor* executor, bool bound,
                                  double tolerance, wire::Encoding* encoding) {
  const io::StoredTraces& stored = *shot->stored;
  const uint32_t ns = shot->n_samples;
  std::vector<wire::kernels::SampleStats> stats(shot->n_chunks());
  const size_t per = std::max<uint32_t>(shot->traces_per_chunk, 1);
  absl::StatusOr<StoredChunks> int16 = ChunksOfStored(
      *shot, sizeof(float) + size_t{ns} * 2, executor, [&](size_t first, size_t n, uint8_t* out) {
        return Int16OfStored(stored, ns, first, n, out, bound ? &stats[first / per] : nullptr);
      });
  bool within = true;
  if (int16.ok() && bound) {
    float peak = 0;
    const double accuracy = ShotAccuracy(*shot, stats, tolerance, &peak);
    within = Int16Within(peak, accuracy);
  }
  if (int16.ok() && within) {
    TakeChunks(*std::move(int16), shot);
    return true;
  }
  if (!int16.ok() && !absl::IsFailedPrecondition(int16.status())) return int16.status();
  SS_ASSIGN_OR_RETURN(
      StoredChunks decoded,
      ChunksOfStored(*shot, size_t{ns} * sizeof(float), executor,
                     [&](size_t first, size_t n, uint8_t* out) {
                       return DecodeStored(stored, ns, first, n, out);
                     }));
  TakeChunks(std::move(decoded), shot);
  if (!int16.ok()) *encoding = wire::Encoding::kLossless;
  return false;
}

}  // namespace

absl::Status EncodeShot(dataset::ShotData* shot, wire::Encoding encoding, double tolerance,
                        Executor* executor, bool bound_int16) {
  if (encoding != wire::Encoding::kLossless && encoding != wire::Encoding::kInt16 &&
      encoding != wire::Encoding::kZfp && encoding != wire::Encoding::kQuantized) {
    return absl::OkStatus();
  }
  if (shot->is_stored()) {
    if (encoding != wire::Encoding::kInt16) {
      return absl::InternalError(absl::StrCat("shot ", shot->shot_id, ": stored traces are "
                                              "encoded INT16 only"));
    }
    SS_ASSIGN_OR_RETURN(const bool int16,
                        EncodeStored(shot, executor, bound_int16, tolerance, &encoding));
    if (int16) {
      shot->encoding = wire::Encoding::kInt16;
      return absl::OkStatus();
    }
    // else from the float32 chunks just decoded: LOSSLESS (NaN), or INT16's bound, whose
    // RMS is taken again below and sends the shot QUANTIZED
  } else if (shot->encoding != wire::Encoding::kFloat32) {
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
