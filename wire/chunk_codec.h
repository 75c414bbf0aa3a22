// The ShotChunk wire codec, both ways, without copying samples more than once.
//
// Encoding: the metadata is serialized by protobuf into a small first slice that ends
// with the samples field's tag and length, and the samples follow as slices of their own
// (a decoded buffer handed to gRPC, or stored traces in a file mapping). The bytes are
// exactly a serialized ShotChunk, so any protobuf client (the Python stubs) decodes them.
//
// Decoding (ReceivedChunk): the metadata is parsed by protobuf, the samples are copied
// once, from gRPC's slices into the caller's buffer, with their CRC-32 computed in the
// same pass (common/crc32_copy: each byte read once); big-endian samples are
// byte-swapped in that copy.
//
// Functions are thread-safe; ReceivedChunk is thread-compatible.
#ifndef SHOTSTREAM_WIRE_CHUNK_CODEC_H_
#define SHOTSTREAM_WIRE_CHUNK_CODEC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "common/sample_buffer.h"
#include "shotstream/v1/shotstream.pb.h"

namespace shotstream::wire {

// REQUIRES: meta.samples() is empty (the samples go in `samples`).
grpc::ByteBuffer EncodeShotChunk(const v1::ShotChunk& meta, SampleBuffer samples);

// The same, with the samples of `traces` (each `trace_bytes` long, in order) sent from
// where they are, one slice per trace and no copy; traces that follow one another in
// memory (a run) share one reference count, so a trace allocates nothing. `keep` holds the
// memory (file mappings that may be closed once no one holds them): the slices hold it
// until gRPC has written the last of them, which can be after the write's completion.
// Traces that lie one after another in memory go as one slice. With `trace_gaps` (the
// client set accept_trace_gaps), so do traces evenly spaced with a gap of at most
// MaxTraceGap (wire/chunk_cut.h) between them (a file's traces in file order, their
// headers between): one slice over the range they lie in, the message's trace_gap saying
// the gap. REQUIRES: meta.trace_gap() is 0.
grpc::ByteBuffer EncodeStoredChunk(const v1::ShotChunk& meta,
                                   absl::Span<const uint8_t* const> traces, size_t trace_bytes,
                                   std::shared_ptr<const void> keep, bool trace_gaps = false);

// A received ShotChunk, read straight from gRPC's slices. Reused for each chunk of a
// stream, it keeps its buffers (the list of slices, the metadata's bytes and message)
// from one chunk to the next.
class ReceivedChunk {
 public:
  // Splits `bb` into the metadata (parsed into meta()) and the place of the samples.
  absl::Status Parse(grpc::ByteBuffer* bb);
  const v1::ShotChunk& meta() const { return meta_; }
  // The samples field's bytes, as sent.
  uint64_t payload_size() const { return payload_size_; }
  // The sample bytes in it: payload_size() less the gaps between traces (trace_gap).
  uint64_t samples_size() const { return samples_size_; }
  // Copies the samples to `dst` as float32 little-endian (byte-swapping them on the way
  // when meta().big_endian(), skipping the gaps between traces) and returns the CRC-32 of
  // the sample bytes as received, continued from `crc`. REQUIRES: dst is 4-byte aligned;
  // samples_size() is a multiple of 4.
  uint32_t CopySamples(uint8_t* dst, uint32_t crc) const;
  // Copies the samples field's bytes as they are (an encoded payload) to `dst`.
  void CopyPayload(uint8_t* dst) const;
  // The samples field's bytes where gRPC put them, when they lie in one slice (the usual
  // case for chunks up to the channel's read size); else null.
  const uint8_t* ContiguousPayload() const;

 private:
  std::vector<grpc::Slice> slices_;
  std::string meta_bytes_;  // the metadata's bytes, gathered for protobuf
  v1::ShotChunk meta_;
  size_t samples_slice_ = 0;   // where the samples start
  size_t samples_offset_ = 0;
  uint64_t payload_size_ = 0;
  uint64_t samples_size_ = 0;
  // A FLOAT32 trace's sample bytes (the runs between trace gaps).
  uint64_t TraceBytes() const { return uint64_t{meta_.n_samples()} * sizeof(float); }
};

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_WIRE_CHUNK_CODEC_H_
