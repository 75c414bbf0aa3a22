// What a stream asks of its shots, once validated (ShotSelection), and how every shot of it
// is then read (ReadPlan) and encoded (EncodePlan): the request is validated once
// (service/request_validation) into a ShotSelection, the encoding and zero copy are decided
// once per stream (stream/stream_plan) into the two plans, and they travel unchanged: the
// read plan to each read (Dataset::ReadShot), the encode plan to each encode (the stream's
// pipeline). Plain values.
#ifndef SHOTSTREAM_SERVER_DATASET_SHOT_PLAN_H_
#define SHOTSTREAM_SERVER_DATASET_SHOT_PLAN_H_

#include <cstdint>
#include <vector>

#include "segy/trace_header.h"
#include "wire/encoding.h"

namespace shotstream::dataset {

// low <= value <= high of a trace header field (its HeaderColumn value).
struct TraceCondition {
  segy::HeaderSelector header;
  double low = 0;
  double high = 0;
};

// A request's ShotSelection (proto), checked against its dataset: every name resolved,
// every number within its limit.
struct ShotSelection {
  std::vector<segy::HeaderSelector> headers;  // columns to return with each shot
  bool raw_trace_headers = false;             // each trace's 240-byte header too
  uint32_t start = 0;  // samples [start, start + count) of every trace
  uint32_t count = 0;  // > 0 once validated (the window, or every sample)
  std::vector<TraceCondition> where;  // only traces meeting every condition
  uint64_t max_chunk_bytes = 1 << 20;  // sample bytes a message holds (whole traces)
  bool accept_big_endian = false;      // the client takes big-endian IEEE samples as stored
  bool accept_trace_gaps = false;      // the client skips bytes between traces (trace_gap)
  wire::Encoding encoding = wire::Encoding::kFloat32;  // as asked: kAuto too
  double tolerance = 0;  // lossy encodings' bound, relative to the shot's RMS (0: default)
};

// Which shots a read may leave as stored traces in the file mapping (zero copy) rather
// than decode: mapped IEEE float32 ones, little-endian only, or of either byte order.
enum class ZeroCopy { kOff, kLittleEndian, kAnyByteOrder };

// What each shot of a stream is read as: the selection (traces, window, header columns,
// the chunk cut by max_chunk_bytes) and the form its samples are read in. What the
// dataset and its source see of a stream; they never see how it is encoded.
struct ReadPlan {
  ShotSelection selection;
  // Integer and IBM samples read as stored (a shot whose traces share such a format comes
  // back kNative); otherwise decoded to float32.
  bool native = false;
  ZeroCopy zero_copy = ZeroCopy::kOff;  // kOff unless the encoding sends float32 as is
};

// How each shot of a stream is encoded for the wire, once it is read (stream/shot_encoder).
struct EncodePlan {
  wire::Encoding encoding = wire::Encoding::kFloat32;  // never kAuto
  // The lossy encodings' bound, relative to each shot's RMS (0: the default;
  // wire::LossyAccuracy is the one rule).
  double tolerance = 0;
  // ENCODING_AUTO's measurement: encode the first traces of every kProbeEvery-th shot
  // with each of these (the result thrown away), so that the next stream can choose:
  // LOSSLESS, and, given a tolerance, QUANTIZED and INT16 (all but the one it sends).
  std::vector<wire::Encoding> probes;
  // ENCODING_AUTO with a tolerance sent as INT16: a shot whose traces INT16 cannot carry
  // within the tolerance goes QUANTIZED (EncodeShot's bound_int16).
  bool bound_int16 = false;
};

// A stream's two plans, decided together once (stream/stream_plan): the read plan goes to
// every read, the encode plan to every encode.
struct ShotPlan {
  ReadPlan read;
  EncodePlan encode;
};

}  // namespace shotstream::dataset

#endif  // SHOTSTREAM_SERVER_DATASET_SHOT_PLAN_H_
