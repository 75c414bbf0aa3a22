// Sample encodings, both ways: the server encodes a chunk of float32 traces (on its reader
// pool), the clients decode it back to float32. The formats are ShotChunk's (see the
// proto's Encoding): c-blosc frames (LOSSLESS), per-trace scaled int16 (INT16), ZFP
// streams with a full header (ZFP), zigzag-coded multiples of a step in c-blosc frames
// (QUANTIZED), SEG-Y samples as stored (NATIVE). The inner loops are wire/sample_kernels'.
//
// Functions are thread-safe (blosc and zfp are called through their reentrant APIs; the
// QUANTIZED scratch is per thread).
#ifndef SHOTSTREAM_WIRE_SAMPLE_ENCODING_H_
#define SHOTSTREAM_WIRE_SAMPLE_ENCODING_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/sample_buffer.h"
#include "wire/encoding.h"

namespace shotstream::wire {

// "float32", "native", "lossless", "int16", "zfp", "quantized", "auto" (the Python and
// CLI names).
absl::string_view EncodingName(Encoding e);
absl::StatusOr<Encoding> EncodingFromName(absl::string_view name);

// The default ZFP and QUANTIZED tolerance (relative to the shot's RMS) when a request
// gives none.
inline constexpr double kDefaultZfpTolerance = 1e-3;

// Encodes n_traces x n_samples float32 samples (trace-major) as kLossless, kInt16, kZfp
// or kQuantized (`zfp_accuracy`: the absolute error bound of ZFP and QUANTIZED).
// FAILED_PRECONDITION for samples the encoding cannot carry (INT16, ZFP, QUANTIZED: NaN
// or infinity; QUANTIZED: a bound QuantizedStep finds no step for); the caller then sends
// them LOSSLESS.
absl::StatusOr<SampleBuffer> EncodeSamples(Encoding e, const float* samples, uint32_t n_traces,
                                           uint32_t n_samples, double zfp_accuracy = 0);

// INT16's chunk is n_traces float32 scales, then n_traces x n_samples little-endian int16.
// Int16Trace writes one trace of it from its n float32 samples: *scale (max |x| / 32767,
// 0 for a trace so small that 1 / scale would overflow) and n int16 at `dst`. False
// (nothing written) where the trace holds NaN or infinity. Thread-safe.
bool Int16Trace(const float* samples, uint32_t n, float* scale, uint8_t* dst);

// Decodes a chunk's payload (its `size` bytes) to n_traces x n_samples float32 at `dst`.
// kNative reads SEG-Y format `sample_format` in the given byte order; kFloat32 is a copy
// (byte-swapped when big_endian). DATA_LOSS naming what is wrong for a payload that does
// not hold exactly those traces.
absl::Status DecodeSamples(Encoding e, int sample_format, bool big_endian, const uint8_t* payload,
                           size_t size, uint32_t n_traces, uint32_t n_samples, float* dst);

// Bytes per sample of SEG-Y format `format` sent NATIVE, or 0 where NATIVE sends float32
// instead (IEEE float32, formats wider than 4 bytes, the gain format 4).
int NativeBytesPerSample(int format);

// The RMS of n samples (0 for none), for the ZFP tolerance.
double Rms(const float* samples, size_t n);

// The one accuracy rule of the lossy encodings (ZFP, QUANTIZED, and INT16 held to a
// tolerance): the absolute error bound for samples of RMS `rms` at `tolerance` (relative
// to the RMS; 0: kDefaultZfpTolerance). Never 0: an all-zero shot gets a tiny positive
// bound (its zeros are exact whatever the bound). Every encoder and probe uses it.
double LossyAccuracy(double tolerance, double rms);

// QUANTIZED's step for an absolute error bound `accuracy` on samples up to |peak| (finite):
// every decoded sample within `accuracy` of its original, float32 rounding included; 0
// where there is none (a bound below float32's precision at the peak, or zero).
float QuantizedStep(double accuracy, float peak);

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_WIRE_SAMPLE_ENCODING_H_
