// ShotChunk on the wire without copying its samples: the metadata is serialized by
// protobuf into a small first slice that ends with the samples field's tag and length,
// and the samples follow as a second slice that owns the decoded buffer (handed to gRPC,
// freed by gRPC when sent). The bytes are exactly a serialized ShotChunk, so any
// protobuf client (the generated Python stubs) decodes them.
#ifndef SHOTSTREAM_SERVER_SERVICE_CHUNK_WIRE_H_
#define SHOTSTREAM_SERVER_SERVICE_CHUNK_WIRE_H_

#include <string>

#include "absl/types/span.h"
#include "grpcpp/support/byte_buffer.h"
#include "common/sample_buffer.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::service {

// REQUIRES: meta.samples() is empty (the samples go in `samples`).
grpc::ByteBuffer EncodeShotChunk(const v1::ShotChunk& meta, SampleBuffer samples);

// The same, with the samples of `traces` (each `trace_bytes` long, in order) sent from
// where they are, one slice per trace and no copy: the memory must outlive the message
// (file mappings, which live as long as their dataset).
grpc::ByteBuffer EncodeStoredChunk(const v1::ShotChunk& meta,
                                   absl::Span<const uint8_t* const> traces, size_t trace_bytes);

}  // namespace shotstream::service

#endif  // SHOTSTREAM_SERVER_SERVICE_CHUNK_WIRE_H_
