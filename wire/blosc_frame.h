// LOSSLESS's payload: a c-blosc 1.x frame of float32 samples (LZ4 behind the bit shuffle),
// written and read here with our own bit shuffle (wire/sample_kernels) and liblz4.
//
// Why not libblosc alone: Debian's libblosc 1.21 runs its shuffles on SSE2 only (its AVX2
// code is built but never chosen), and its bit transpose was a quarter to a third of
// LOSSLESS's CPU on each side (docs/performance.md). The frames stay c-blosc's: libblosc and
// python3-blosc decode what WriteBloscFrame writes, and ReadBloscFrame reads what libblosc
// writes (any other frame it hands to libblosc). Thread-safe (scratch is per thread).
#ifndef SHOTSTREAM_WIRE_BLOSC_FRAME_H_
#define SHOTSTREAM_WIRE_BLOSC_FRAME_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace shotstream::wire {

// The most bytes a frame of `bytes` of samples takes (c-blosc's BLOSC_MAX_OVERHEAD: 16).
inline size_t BloscFrameBound(size_t bytes) { return bytes + 16; }

// Writes n float32 samples as a frame (typesize 4, bit shuffle, LZ4 with acceleration
// `lz4_acceleration`, blocks of 126 KiB, each one stream) at `out`, which holds
// BloscFrameBound(4 n) bytes; returns the frame's size. Data LZ4 cannot shrink goes as
// c-blosc's plain copy.
size_t WriteBloscFrame(const float* samples, size_t n, int lz4_acceleration, uint8_t* out);

// Reads a frame of exactly n float32 samples and `size` bytes into dst. A frame that is not
// LZ4 with the bit shuffle or none, typesize 4, goes to libblosc. DATA_LOSS names what is
// wrong with a frame that cannot be read.
absl::Status ReadBloscFrame(const uint8_t* frame, size_t size, size_t n, float* dst);

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_WIRE_BLOSC_FRAME_H_
