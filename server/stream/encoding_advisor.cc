#include "server/stream/encoding_advisor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shotstream::stream {
namespace {

// Each new measurement counts as much as all before it: quick to follow a link that
// changed, steady over streams of one.
double Blend(double old, double sample) { return old == 0 ? sample : 0.5 * old + 0.5 * sample; }

}  // namespace

wire::Encoding EncodingAdvisor::Choose(const std::string& peer, const std::string& dataset,
                                       int native_bytes) const {
  const bool native_smaller = native_bytes > 0 && native_bytes < 4;
  const wire::Encoding plain = native_smaller ? wire::Encoding::kNative : wire::Encoding::kFloat32;
  absl::MutexLock lock(&mu_);
  auto seen_plain = outcome_.find(OutcomeKey(peer, dataset, plain));
  auto seen_lossless = outcome_.find(OutcomeKey(peer, dataset, wire::Encoding::kLossless));
  if (seen_plain != outcome_.end() && seen_lossless != outcome_.end()) {
    return seen_lossless->second > kMargin * seen_plain->second ? wire::Encoding::kLossless
                                                                 : plain;
  }
  auto l = link_.find(peer);
  auto c = codec_.find(dataset);
  if (l == link_.end() || c == codec_.end()) return plain;
  const double link = l->second;
  const double plain_rate = link * (native_smaller ? 4.0 / native_bytes : 1.0);
  const double lossless_rate = std::min(link * c->second.ratio, c->second.rate * codec_threads_);
  return lossless_rate > kMargin * plain_rate ? wire::Encoding::kLossless : plain;
}

void EncodingAdvisor::RecordLink(const std::string& peer, uint64_t bytes, double seconds) {
  if (bytes < (1 << 20) || seconds <= 0) return;  // too little to say anything
  absl::MutexLock lock(&mu_);
  double& rate = link_[peer];
  rate = Blend(rate, static_cast<double>(bytes) / seconds);
}

std::string EncodingAdvisor::OutcomeKey(const std::string& peer, const std::string& dataset,
                                        wire::Encoding e) {
  return absl::StrCat(peer, "\n", dataset, "\n", static_cast<int>(e));
}

void EncodingAdvisor::RecordOutcome(const std::string& peer, const std::string& dataset,
                                    wire::Encoding encoding, uint64_t float32_bytes,
                                    double seconds) {
  if (float32_bytes < (1 << 20) || seconds <= 0) return;
  absl::MutexLock lock(&mu_);
  double& rate = outcome_[OutcomeKey(peer, dataset, encoding)];
  rate = Blend(rate, static_cast<double>(float32_bytes) / seconds);
}

void EncodingAdvisor::RecordCodec(const std::string& dataset, uint64_t raw, uint64_t encoded,
                                  double seconds) {
  if (raw == 0 || encoded == 0 || seconds <= 0) return;
  absl::MutexLock lock(&mu_);
  Codec& c = codec_[dataset];
  c.ratio = Blend(c.ratio, static_cast<double>(raw) / static_cast<double>(encoded));
  c.rate = Blend(c.rate, static_cast<double>(raw) / seconds);
}

double EncodingAdvisor::link_rate(const std::string& peer) const {
  absl::MutexLock lock(&mu_);
  auto it = link_.find(peer);
  return it == link_.end() ? 0 : it->second;
}

double EncodingAdvisor::lossless_ratio(const std::string& dataset) const {
  absl::MutexLock lock(&mu_);
  auto it = codec_.find(dataset);
  return it == codec_.end() ? 0 : it->second.ratio;
}

}  // namespace shotstream::stream
