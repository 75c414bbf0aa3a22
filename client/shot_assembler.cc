#include "client/shot_assembler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "common/status_macros.h"
#include "wire/chunk_plan.h"
#include "wire/encoding_proto.h"
#include "wire/sample_encoding.h"

namespace shotstream::wire {

absl::Status ShotAssembler::Start(const v1::ShotChunk& chunk) {
  shot_ = AssembledShot();
  shot_.shot_id = chunk.shot_id();
  shot_.n_traces = chunk.n_traces();
  shot_.shot_traces = chunk.n_traces();
  shot_.n_samples = chunk.n_samples();
  shot_.sample_interval_us = chunk.sample_interval_us();
  const uint64_t n = uint64_t{shot_.n_traces} * shot_.n_samples;
  if (chunk.total_bytes() != n * sizeof(float)) {
    return absl::DataLossError(absl::StrCat("shot ", shot_.shot_id, ": total_bytes ",
                                            chunk.total_bytes(), " != ", n * sizeof(float)));
  }
  // With pieces and chunk CRC-32s, each part gets a buffer of its own.
  piecewise_ = pieces_ && chunk.has_chunk_crc32();
  if (!piecewise_) {
    shot_.samples = pool_->Acquire(n);
    if (n > 0 && shot_.samples.data() == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat("no memory for shot ", shot_.shot_id));
    }
  }
  for (const v1::HeaderColumn& col : chunk.headers()) {
    shot_.headers.emplace_back(col.name(),
                               std::vector<double>(col.values().begin(), col.values().end()));
  }
  if (raw_trace_headers_) {
    if (chunk.trace_headers().size() != uint64_t{shot_.n_traces} * 240) {
      return absl::DataLossError(absl::StrCat("shot ", shot_.shot_id, ": ",
                                              chunk.trace_headers().size(),
                                              " bytes of trace headers for ", shot_.n_traces,
                                              " traces"));
    }
    shot_.trace_headers = chunk.trace_headers();
  }
  crc_ = 0;
  wire_bytes_ = 0;
  in_shot_ = true;
  first_part_ = true;
  zfp_.clear();
  return absl::OkStatus();
}

absl::StatusOr<bool> ShotAssembler::Add(const ReceivedChunk& raw, AssembledShot* out) {
  const v1::ShotChunk& chunk = raw.meta();
  if (!in_shot_) SS_RETURN_IF_ERROR(Start(chunk));
  SS_ASSIGN_OR_RETURN(const ChunkPlace place,
                      PlaceChunk(chunk, shot_.shot_traces, shot_.n_samples, raw.samples_size()));
  const uint32_t first_trace = place.first_trace;
  const uint32_t traces = place.traces;
  const uint64_t out_bytes = place.float32_bytes;
  gpu::HostBuffer part;
  uint8_t* at;
  if (piecewise_) {
    part = pool_->Acquire(uint64_t{traces} * shot_.n_samples);
    if (traces > 0 && part.data() == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat("no memory for shot ", shot_.shot_id));
    }
    at = reinterpret_cast<uint8_t*>(part.data());
  } else {
    at = reinterpret_cast<uint8_t*>(shot_.samples.data()) + chunk.offset();
  }
  wire_bytes_ += raw.payload_size();
  const Encoding encoding = FromProto(chunk.encoding());
  encoding_ = encoding;
  // The chunk's CRC-32 by its encoding's rule (chunk_plan.h).
  uint32_t crc;
  if (encoding == Encoding::kFloat32) {
    crc = raw.CopySamples(at, 0);
    SS_RETURN_IF_ERROR(CheckChunk(chunk, first_trace, traces, crc));
  } else if (encoding == Encoding::kZfp) {
    std::string payload(raw.payload_size(), '\0');
    raw.CopyPayload(reinterpret_cast<uint8_t*>(payload.data()));
    crc = Crc32(0, payload.data(), payload.size());
    SS_RETURN_IF_ERROR(CheckChunk(chunk, first_trace, traces, crc));
    if (chunk.has_chunk_crc32()) {  // verified: decoded now
      SS_RETURN_IF_ERROR(Decode(chunk, reinterpret_cast<const uint8_t*>(payload.data()),
                                payload.size(), at));
    } else {  // kept until the shot's CRC-32 matched: libzfp never sees unverified bytes
      zfp_.emplace_back(chunk, std::move(payload));
    }
  } else {
    // Decoded from where gRPC put it when it lies in one slice, else from a copy, as it
    // arrives. INT16 and QUANTIZED are checked before they are decoded; the exact ones
    // after (their decoders, ours and c-blosc's, check every size and are fuzzed).
    const uint8_t* payload = raw.ContiguousPayload();
    if (payload == nullptr) {
      if (scratch_.size() < raw.payload_size()) scratch_.resize(raw.payload_size());
      raw.CopyPayload(scratch_.data());
      payload = scratch_.data();
    }
    if (!IsExact(encoding)) {
      crc = Crc32(0, payload, raw.payload_size());
      SS_RETURN_IF_ERROR(CheckChunk(chunk, first_trace, traces, crc));
      SS_RETURN_IF_ERROR(Decode(chunk, payload, raw.payload_size(), at));
    } else {
      SS_RETURN_IF_ERROR(Decode(chunk, payload, raw.payload_size(), at));
      crc = Crc32(0, at, out_bytes);
      SS_RETURN_IF_ERROR(CheckChunk(chunk, first_trace, traces, crc));
    }
  }
  crc_ = Crc32Combine(crc_, crc,
                      CrcCoveredBytes(encoding, traces, shot_.n_samples, raw.samples_size()));
  if (chunk.last()) {
    in_shot_ = false;
    if (crc_ != chunk.crc32()) {
      return absl::DataLossError(absl::StrCat("shot ", shot_.shot_id,
                                              ": checksum mismatch (CRC-32 ", crc_,
                                              " received, ", chunk.crc32(), " sent)"));
    }
  }
  if (piecewise_) {  // this chunk is a part: handed out now
    *out = AssembledShot();
    out->shot_id = shot_.shot_id;
    out->n_samples = shot_.n_samples;
    out->sample_interval_us = shot_.sample_interval_us;
    out->n_traces = traces;
    out->first_trace = first_trace;
    out->shot_traces = shot_.shot_traces;
    out->last_piece = chunk.last();
    out->samples = std::move(part);
    if (first_part_) {
      out->headers = std::move(shot_.headers);
      out->trace_headers = std::move(shot_.trace_headers);
      first_part_ = false;
    }
    out->encoding = encoding;
    return true;
  }
  if (!chunk.last()) return false;
  for (const auto& [meta, payload] : zfp_) {
    SS_RETURN_IF_ERROR(Decode(meta, reinterpret_cast<const uint8_t*>(payload.data()),
                              payload.size(),
                              reinterpret_cast<uint8_t*>(shot_.samples.data()) + meta.offset()));
  }
  zfp_.clear();
  shot_.encoding = encoding_;
  *out = std::move(shot_);
  return true;
}

// A chunk whose own CRC-32 (where sent) is not `crc`: DATA_LOSS naming its traces.
absl::Status ShotAssembler::CheckChunk(const v1::ShotChunk& chunk, uint32_t first,
                                       uint32_t traces, uint32_t crc) const {
  if (!chunk.has_chunk_crc32() || chunk.chunk_crc32() == crc) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      "shot ", shot_.shot_id, ": traces [", first, ", ", first + traces,
      ") (the chunk at byte ", chunk.offset(), "): checksum mismatch (CRC-32 ", crc,
      " received, ", chunk.chunk_crc32(), " sent)"));
}

// An encoded chunk's samples (its chunk_traces traces) decoded to float32 at `at`.
absl::Status ShotAssembler::Decode(const v1::ShotChunk& chunk, const uint8_t* payload,
                                   size_t size, uint8_t* at) const {
  absl::Status s = DecodeSamples(FromProto(chunk.encoding()), chunk.sample_format(),
                                 chunk.big_endian(), payload, size, chunk.chunk_traces(),
                                 shot_.n_samples, reinterpret_cast<float*>(at));
  if (s.ok()) return s;
  return absl::DataLossError(absl::StrCat("shot ", shot_.shot_id, ": ", s.message()));
}

}  // namespace shotstream::wire
