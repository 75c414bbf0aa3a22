// Encoding: how a chunk's samples travel (the proto's shotstream.v1.Encoding, same
// numbers), for code that must not depend on the generated messages. A value type.
#ifndef SHOTSTREAM_WIRE_ENCODING_H_
#define SHOTSTREAM_WIRE_ENCODING_H_

namespace shotstream::wire {

enum class Encoding : int {
  kFloat32 = 0,
  kNative = 1,
  kLossless = 2,
  kInt16 = 3,
  kZfp = 4,
  kAuto = 5,
  kQuantized = 6,
};

// Whether the shot's CRC-32 covers the float32 samples the caller gets (exact encodings)
// rather than the encoded bytes (lossy ones).
inline bool IsExact(Encoding e) {
  return e == Encoding::kFloat32 || e == Encoding::kNative || e == Encoding::kLossless;
}

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_WIRE_ENCODING_H_
