#include "wire/chunk_plan.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wire/encoding_proto.h"

namespace shotstream::wire {

void PlanChunk(const ShotFrame& shot, uint32_t first_trace, uint32_t traces, bool last,
               v1::ShotChunk* meta) {
  meta->Clear();
  meta->set_index(shot.index);
  meta->set_shot_id(shot.shot_id);
  meta->set_n_traces(shot.n_traces);
  meta->set_n_samples(shot.n_samples);
  meta->set_sample_interval_us(shot.sample_interval_us);
  meta->set_offset(uint64_t{first_trace} * shot.n_samples * sizeof(float));
  meta->set_total_bytes(uint64_t{shot.n_traces} * shot.n_samples * sizeof(float));
  meta->set_encoding(ToProto(shot.encoding));
  if (shot.encoding == Encoding::kNative) meta->set_sample_format(shot.sample_format);
  meta->set_big_endian(shot.big_endian);
  if (shot.encoding != Encoding::kFloat32) meta->set_chunk_traces(traces);
  if (last) meta->set_last(true);
}

uint64_t CrcCoveredBytes(Encoding e, uint32_t traces, uint32_t n_samples,
                         uint64_t payload_bytes) {
  return IsExact(e) ? uint64_t{traces} * n_samples * sizeof(float) : payload_bytes;
}

absl::StatusOr<ChunkPlace> PlaceChunk(const v1::ShotChunk& chunk, uint32_t shot_traces,
                                      uint32_t n_samples, uint64_t payload_bytes) {
  const uint64_t trace_bytes = uint64_t{n_samples} * sizeof(float);
  const uint64_t total = uint64_t{shot_traces} * trace_bytes;
  // FLOAT32 chunks say their traces by their size, the others by chunk_traces.
  const uint64_t bytes = FromProto(chunk.encoding()) == Encoding::kFloat32
                             ? payload_bytes
                             : uint64_t{chunk.chunk_traces()} * trace_bytes;
  if (chunk.offset() > total || bytes > total - chunk.offset() ||
      (trace_bytes > 0 && (chunk.offset() % trace_bytes != 0 || bytes % trace_bytes != 0))) {
    return absl::DataLossError(absl::StrCat("shot ", chunk.shot_id(), ": chunk at byte ",
                                            chunk.offset(),
                                            " overruns the shot or splits a trace"));
  }
  ChunkPlace place;
  if (trace_bytes > 0) {
    place.first_trace = static_cast<uint32_t>(chunk.offset() / trace_bytes);
    place.traces = static_cast<uint32_t>(bytes / trace_bytes);
  }
  place.float32_bytes = bytes;
  return place;
}

}  // namespace shotstream::wire
