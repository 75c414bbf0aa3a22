// EncodingAdvisor: what ENCODING_AUTO picks for a stream, from what earlier streams
// measured: each peer's link rate (bytes a second while a write was on the wire) and each
// dataset's LOSSLESS ratio and codec rate (probes of float32 streams, and LOSSLESS ones).
//
// Once a peer has streamed a dataset both ways, the pick is the one that delivered float32
// samples faster (LOSSLESS only when kMargin faster): what counts is the outcome, which
// includes what the model below cannot see (the client's CPU decoding, other work on the
// server's cores). Before that, LOSSLESS is tried when the model says it would be faster:
// min(link x ratio, codec rate x reader threads) > kMargin x link x (4 / native bytes a
// sample). Until a peer's link or a dataset's codec has been measured, it picks NATIVE
// where that is smaller than float32, else FLOAT32, and the stream measures. Thread-safe.
#ifndef SHOTSTREAM_SERVER_STREAM_ENCODING_ADVISOR_H_
#define SHOTSTREAM_SERVER_STREAM_ENCODING_ADVISOR_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "wire/encoding.h"

namespace shotstream::stream {

class EncodingAdvisor {
 public:
  // LOSSLESS must beat the plain encoding by this factor (its decode costs the client).
  static constexpr double kMargin = 1.2;

  // `codec_threads`: the reader threads compression runs on.
  explicit EncodingAdvisor(int codec_threads) : codec_threads_(codec_threads) {}

  // `native_bytes`: bytes a sample the dataset's NATIVE encoding sends (4 where it sends
  // float32).
  wire::Encoding Choose(const std::string& peer, const std::string& dataset,
                        int native_bytes) const ABSL_LOCKS_EXCLUDED(mu_);

  // A stream to `peer` wrote `bytes` in `seconds` of writes on the wire.
  void RecordLink(const std::string& peer, uint64_t bytes, double seconds)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A stream of `dataset` to `peer` sent as `encoding` delivered `float32_bytes` of
  // samples in `seconds` (first write to last).
  void RecordOutcome(const std::string& peer, const std::string& dataset,
                     wire::Encoding encoding, uint64_t float32_bytes, double seconds)
      ABSL_LOCKS_EXCLUDED(mu_);
  // LOSSLESS made `encoded` bytes of `raw` float32 bytes of `dataset` in `seconds` of one
  // thread.
  void RecordCodec(const std::string& dataset, uint64_t raw, uint64_t encoded, double seconds)
      ABSL_LOCKS_EXCLUDED(mu_);

  // What it knows (tests, logs): 0 where nothing was measured.
  double link_rate(const std::string& peer) const ABSL_LOCKS_EXCLUDED(mu_);
  double lossless_ratio(const std::string& dataset) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Codec {
    double ratio = 0;  // raw / encoded
    double rate = 0;   // raw bytes a second, one thread
  };
  const int codec_threads_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, double> link_ ABSL_GUARDED_BY(mu_);  // bytes a second
  absl::flat_hash_map<std::string, Codec> codec_ ABSL_GUARDED_BY(mu_);
  // (peer, dataset, encoding) -> float32 bytes a second delivered.
  absl::flat_hash_map<std::string, double> outcome_ ABSL_GUARDED_BY(mu_);
  static std::string OutcomeKey(const std::string& peer, const std::string& dataset,
                                wire::Encoding e);
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_ENCODING_ADVISOR_H_
