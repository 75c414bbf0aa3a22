#include "wire/chunk_wire.h"

#include <vector>

#include "grpcpp/support/slice.h"

namespace shotstream::service {
namespace {

constexpr int kSamplesField = 15;  // ShotChunk.samples: the highest field number

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void DestroyBytes(void* p) { delete[] static_cast<uint8_t*>(p); }

// The serialized metadata followed by the samples field's tag and length.
std::string Prefix(const v1::ShotChunk& meta, uint64_t samples_size) {
  std::string prefix;
  meta.SerializeToString(&prefix);  // fields 1..11, in field order, before field 15
  if (samples_size == 0) return prefix;
  AppendVarint((kSamplesField << 3) | 2, &prefix);  // length-delimited
  AppendVarint(samples_size, &prefix);
  return prefix;
}

}  // namespace

grpc::ByteBuffer EncodeShotChunk(const v1::ShotChunk& meta, SampleBuffer samples) {
  const std::string prefix = Prefix(meta, samples.size());
  if (samples.empty()) {
    grpc::Slice only(prefix);
    return grpc::ByteBuffer(&only, 1);
  }
  const size_t size = samples.size();
  uint8_t* owned = samples.release();  // freed by gRPC through DestroyBytes
  grpc::Slice slices[2] = {grpc::Slice(prefix), grpc::Slice(owned, size, &DestroyBytes, owned)};
  return grpc::ByteBuffer(slices, 2);
}

grpc::ByteBuffer EncodeStoredChunk(const v1::ShotChunk& meta,
                                   absl::Span<const uint8_t* const> traces, size_t trace_bytes) {
  std::vector<grpc::Slice> slices;
  slices.reserve(traces.size() + 1);
  slices.emplace_back(Prefix(meta, uint64_t{trace_bytes} * traces.size()));
  for (const uint8_t* t : traces) slices.emplace_back(t, trace_bytes, grpc::Slice::STATIC_SLICE);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace shotstream::service
