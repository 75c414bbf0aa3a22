// The one place wire::Encoding (code that must not depend on the generated messages) and
// the proto's shotstream.v1.Encoding meet: they share every value, and a value added to
// one must be added to the other, which these assertions enforce at compile time.
// Thread-safe: constexpr functions.
#ifndef SHOTSTREAM_WIRE_ENCODING_PROTO_H_
#define SHOTSTREAM_WIRE_ENCODING_PROTO_H_

#include "shotstream/v1/shotstream.pb.h"
#include "wire/encoding.h"

namespace shotstream::wire {

static_assert(static_cast<int>(Encoding::kFloat32) == v1::ENCODING_FLOAT32);
static_assert(static_cast<int>(Encoding::kNative) == v1::ENCODING_NATIVE);
static_assert(static_cast<int>(Encoding::kLossless) == v1::ENCODING_LOSSLESS);
static_assert(static_cast<int>(Encoding::kInt16) == v1::ENCODING_INT16);
static_assert(static_cast<int>(Encoding::kZfp) == v1::ENCODING_ZFP);
static_assert(static_cast<int>(Encoding::kAuto) == v1::ENCODING_AUTO);
static_assert(static_cast<int>(Encoding::kQuantized) == v1::ENCODING_QUANTIZED);
static_assert(v1::Encoding_ARRAYSIZE == static_cast<int>(Encoding::kQuantized) + 1,
              "v1::Encoding has a value wire::Encoding lacks");

constexpr v1::Encoding ToProto(Encoding e) { return static_cast<v1::Encoding>(e); }

// REQUIRES: v1::Encoding_IsValid(e) (a request's value is checked before).
constexpr Encoding FromProto(int e) { return static_cast<Encoding>(e); }

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_WIRE_ENCODING_PROTO_H_
