#include "server/stream/outgoing_chunk.h"

#include <algorithm>
#include <utility>

namespace shotstream::stream {
namespace {

void AddHeaders(dataset::ShotData& shot, v1::ShotChunk* meta) {
  const dataset::ShotHead* head = shot.head.get();
  // A shot read whole gives its columns away; a head's stay with the head.
  auto& columns = head != nullptr ? head->headers : shot.headers;
  for (auto& [name, values] : columns) {
    v1::HeaderColumn* col = meta->add_headers();
    col->set_name(name);
    col->mutable_values()->Add(values.begin(), values.end());
  }
  if (head != nullptr) {
    if (!head->trace_headers.empty()) meta->set_trace_headers(head->trace_headers);
  } else if (!shot.trace_headers.empty()) {
    meta->set_trace_headers(std::move(shot.trace_headers));
  }
}

}  // namespace

uint32_t TakeChunk(dataset::ShotData& shot, const ChunkAt& at, bool last, bool trace_gaps,
                   wire::ChunkWriter* writer, OutgoingChunk* out) {
  const size_t c = at.chunk;
  out->samples = SampleBuffer();
  out->stored.clear();
  out->stored_set.reset();
  out->trace_bytes = 0;
  out->stored_first = 0;
  out->trace_gaps = false;
  uint32_t traces;
  if (shot.is_stored()) {
    const std::vector<const uint8_t*>& all = shot.stored->traces();
    const size_t first = c * shot.traces_per_chunk;
    const size_t n = std::min<size_t>(shot.traces_per_chunk, all.size() - first);
    out->stored.assign(all.begin() + first, all.begin() + first + n);
    out->stored_set = shot.stored;
    out->stored_first = first;
    out->trace_bytes = shot.stored->trace_bytes();
    out->trace_gaps = trace_gaps && shot.encoding == wire::Encoding::kFloat32;
    traces = static_cast<uint32_t>(n);
  } else {
    out->samples = std::move(shot.chunks[c]);
    traces = c < shot.chunk_traces.size()
                 ? shot.chunk_traces[c]
                 : static_cast<uint32_t>(out->samples.size() / sizeof(float) /
                                         std::max<uint32_t>(shot.n_samples, 1));
  }
  const dataset::ShotHead* head = shot.head.get();
  wire::ShotFrame frame;
  frame.index = static_cast<uint32_t>(at.index);
  frame.shot_id = shot.shot_id;
  frame.n_traces = head != nullptr ? head->n_traces : shot.n_traces;
  frame.n_samples = shot.n_samples;
  frame.sample_interval_us = at.sample_interval_us;
  frame.encoding = shot.encoding;
  frame.sample_format = shot.sample_format;
  frame.big_endian = shot.big_endian;
  const bool first_of_shot = at.piece == 0 && c == 0;
  writer->Frame(frame, first_of_shot, traces, out->sample_bytes(), last, &out->meta);
  if (first_of_shot) AddHeaders(shot, &out->meta);
  if (!shot.chunk_crc32.empty()) writer->Seal(shot.chunk_crc32[c], &out->meta);
  return traces;
}

}  // namespace shotstream::stream
