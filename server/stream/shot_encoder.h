// EncodeShot: a decoded shot's float32 chunks re-encoded for the wire (LOSSLESS, INT16,
// ZFP, QUANTIZED), on the reader pool, before the stream window hands them out, its chunks
// spread over the pool's threads. Thread-safe (a pure function of its arguments).
#ifndef SHOTSTREAM_SERVER_STREAM_SHOT_ENCODER_H_
#define SHOTSTREAM_SERVER_STREAM_SHOT_ENCODER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "server/dataset/shot_data.h"
#include "server/stream/executor.h"
#include "wire/encoding.h"

namespace shotstream::stream {

// Encodes every chunk of `shot` (decoded float32: shot->encoding kFloat32; or stored
// float32 traces for plain INT16, encoded from the mapping in one pass, the float32 shot
// never made, and decoded to float32 chunks for LOSSLESS where INT16 cannot carry them) as
// `encoding`, chunks at once on the calling thread and on `executor` (null:
// the calling thread alone; see Spread). ZFP's and QUANTIZED's bound is `tolerance` (0: the
// default) times the RMS of the shot (of the piece, for a shot read in pieces), taken
// first in one pass that also finds NaN and infinity. A shot the lossy encodings cannot
// carry (NaN or infinite samples; for QUANTIZED, a bound below float32's precision) goes
// LOSSLESS instead: shot->encoding says what it got. Memory: LOSSLESS, ZFP and QUANTIZED
// free each float32 chunk once it is encoded; INT16 finds NaN in the same pass that
// encodes, so it keeps the float32 chunks until the last is encoded (at most 1.5 x the
// shot; with bound_int16 the RMS pass found them first, and each is freed once encoded).
// For the lossy encodings shot->crc32 and chunk_crc32 become the CRC-32s of the encoded
// chunks; the exact ones keep those of the float32 samples. kFloat32 and kNative change nothing.
// With `bound_int16` (ENCODING_AUTO given a tolerance picked INT16), INT16 must also keep
// every sample within `tolerance` x the shot's RMS: a shot whose largest sample makes
// INT16's per-trace bound (max |trace| / 65534) larger goes QUANTIZED instead (the RMS
// pass runs first, as for QUANTIZED).
absl::Status EncodeShot(dataset::ShotData* shot, wire::Encoding encoding, double tolerance,
                        Executor* executor = nullptr, bool bound_int16 = false);

// Up to `max_traces` of the shot's first traces as float32 (whatever its chunks hold:
// float32, NATIVE, stored traces), for a codec probe; empty for a shot of no trace.
std::vector<float> FirstTraces(const dataset::ShotData& shot, uint32_t max_traces);

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_SHOT_ENCODER_H_
