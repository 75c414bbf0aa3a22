// Reads a received ShotChunk straight from gRPC's slices: the small metadata is parsed by
// protobuf, the samples are copied once, from the slices into the caller's buffer, with
// their CRC-32 computed on the way (while each piece is in cache); big-endian samples are
// byte-swapped in that same copy. No intermediate std::string for the samples.
//
// Thread-compatible.
#ifndef SHOTSTREAM_CLIENT_CHUNK_READER_H_
#define SHOTSTREAM_CLIENT_CHUNK_READER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::client {

class RawChunk {
 public:
  // Splits `bb` into the metadata (parsed into meta()) and the place of the samples.
  absl::Status Parse(grpc::ByteBuffer* bb);
  const v1::ShotChunk& meta() const { return meta_; }
  uint64_t samples_size() const { return samples_size_; }
  // Copies the samples to `dst` as float32 little-endian (byte-swapping them on the way
  // when meta().big_endian()) and returns the CRC-32 of the bytes as received, continued
  // from `crc`. REQUIRES: dst is 4-byte aligned; samples_size() is a multiple of 4.
  uint32_t CopySamples(uint8_t* dst, uint32_t crc) const;

 private:
  std::vector<grpc::Slice> slices_;
  v1::ShotChunk meta_;
  size_t samples_slice_ = 0;   // where the samples start
  size_t samples_offset_ = 0;
  uint64_t samples_size_ = 0;
};

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_CHUNK_READER_H_
