// EncodingAdvisor: what ENCODING_AUTO picks for a stream, from what earlier streams
// measured: each peer's link rate (bytes a second while a write was on the wire) and each
// dataset's codec ratios and rates (probes of other streams, and streams so encoded):
// LOSSLESS's, and QUANTIZED's at each tolerance asked for.
//
// The candidates are the plain encoding (NATIVE where that is smaller than float32, else
// FLOAT32), LOSSLESS, and, where the request gave a tolerance (it accepts that loss),
// QUANTIZED at that tolerance and INT16 (its shots checked against the tolerance: see
// EncodeShot's bound_int16). Each is rated by what it delivered to this peer from this
// dataset (float32 bytes a second, first write to last) where a stream ran to its end so
// encoded: the outcome, which includes what a model cannot see (the client's CPU
// decoding, other work on the server's cores). A candidate not yet tried is rated by the
// model min(link x ratio, codec rate x reader threads), the plain one by link x (4 /
// native bytes a sample). A compressed candidate wins only when faster than the plain
// one by a margin (kMargin for a model's rating, kOutcomeMargin where both were
// measured), and the fastest of those wins; so one that the model rates high is tried,
// and its outcome then keeps or drops it. Until a peer's link has been measured, and for a
// codec not yet measured, the plain encoding it is. Thread-safe.
#ifndef SHOTSTREAM_SERVER_STREAM_ENCODING_ADVISOR_H_
#define SHOTSTREAM_SERVER_STREAM_ENCODING_ADVISOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "wire/encoding.h"

namespace shotstream::stream {

class EncodingAdvisor {
 public:
  // A compressed candidate rated by the model must beat the plain encoding by kMargin
  // (its decode costs the client, which the model does not see); one whose outcome was
  // measured, which includes that, must only beat it (ties go plain). A margin there is
  // what `auto` gives up against the best fixed choice, on top of the outcomes' own bias
  // against codecs (a stream's first read and encode count in it): at 1.05, `auto` sent
  // float32 against a `lossless` that delivered 1.06x it; at 1.03, float32 for one stream
  // in ten against one that delivered 1.2x (10 Gbit/s, 16-shot streams).
  static constexpr double kMargin = 1.2;
  static constexpr double kOutcomeMargin = 1.0;
  // Outcomes of smaller streams are not recorded: a fresh connection's TCP slow start and
  // a stream's first reads weigh too much in them.
  static constexpr uint64_t kMinOutcomeBytes = 16 << 20;

  // `codec_threads`: the reader threads compression runs on.
  explicit EncodingAdvisor(int codec_threads) : codec_threads_(codec_threads) {}

  // `native_bytes`: bytes a sample the dataset's NATIVE encoding sends (4 where it sends
  // float32); `tolerance` > 0: QUANTIZED at that tolerance and INT16 are candidates.
  wire::Encoding Choose(const std::string& peer, const std::string& dataset, int native_bytes,
                        double tolerance = 0) const ABSL_LOCKS_EXCLUDED(mu_);

  // A stream to `peer` wrote `bytes` in `seconds` of writes on the wire.
  void RecordLink(const std::string& peer, uint64_t bytes, double seconds)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A stream of `dataset` to `peer` sent as `encoding` (QUANTIZED: at `tolerance`)
  // delivered `float32_bytes` of samples in `seconds` (first write to last).
  void RecordOutcome(const std::string& peer, const std::string& dataset,
                     wire::Encoding encoding, uint64_t float32_bytes, double seconds,
                     double tolerance = 0) ABSL_LOCKS_EXCLUDED(mu_);
  // The compressed candidates for a request's tolerance (0: LOSSLESS alone; > 0: also
  // QUANTIZED and INT16), in the order Choose weighs them; the plan probes them too.
  static std::vector<wire::Encoding> Candidates(double tolerance);

  // `encoding` (LOSSLESS, INT16, or QUANTIZED at `tolerance`) made `encoded` bytes of
  // `raw` float32 bytes of `dataset` in `seconds` of one thread.
  void RecordCodec(const std::string& dataset, uint64_t raw, uint64_t encoded, double seconds,
                   wire::Encoding encoding = wire::Encoding::kLossless, double tolerance = 0)
      ABSL_LOCKS_EXCLUDED(mu_);

  // What it knows (tests, logs): 0 where nothing was measured.
  double link_rate(const std::string& peer) const ABSL_LOCKS_EXCLUDED(mu_);
  double lossless_ratio(const std::string& dataset) const ABSL_LOCKS_EXCLUDED(mu_);
  double quantized_ratio(const std::string& dataset, double tolerance) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Codec {
    double ratio = 0;  // raw / encoded
    double rate = 0;   // raw bytes a second, one thread
  };
  const int codec_threads_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, double> link_ ABSL_GUARDED_BY(mu_);  // bytes a second
  // (dataset, encoding, tolerance) -> its codec.
  absl::flat_hash_map<std::string, Codec> codec_ ABSL_GUARDED_BY(mu_);
  // (peer, dataset, encoding, tolerance) -> float32 bytes a second delivered.
  absl::flat_hash_map<std::string, double> outcome_ ABSL_GUARDED_BY(mu_);
  // Keys: QUANTIZED's carry its tolerance, the others' 0.
  double Ratio(const std::string& codec_key) const ABSL_LOCKS_EXCLUDED(mu_);
  static std::string CodecKey(const std::string& dataset, wire::Encoding e, double tolerance);
  static std::string OutcomeKey(const std::string& peer, const std::string& dataset,
                                wire::Encoding e, double tolerance = 0);
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_ENCODING_ADVISOR_H_
