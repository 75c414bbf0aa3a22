#include "server/service/chunk_wire.h"

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

}  // namespace

grpc::ByteBuffer EncodeShotChunk(const v1::ShotChunk& meta, SampleBuffer samples) {
  std::string prefix;
  meta.SerializeToString(&prefix);  // fields 1..10, in field order, before field 15
  if (samples.empty()) {
    grpc::Slice only(prefix);
    return grpc::ByteBuffer(&only, 1);
  }
  AppendVarint((kSamplesField << 3) | 2, &prefix);  // length-delimited
  AppendVarint(samples.size(), &prefix);
  const size_t size = samples.size();
  uint8_t* owned = samples.release();  // freed by gRPC through DestroyBytes
  grpc::Slice slices[2] = {grpc::Slice(prefix), grpc::Slice(owned, size, &DestroyBytes, owned)};
  return grpc::ByteBuffer(slices, 2);
}

}  // namespace shotstream::service
