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
                                       int native_bytes, double tolerance) const {
  const bool native_smaller = native_bytes > 0 && native_bytes < 4;
  const wire::Encoding plain = native_smaller ? wire::Encoding::kNative : wire::Encoding::kFloat32;
  absl::MutexLock lock(&mu_);
  auto l = link_.find(peer);
  const double link = l == link_.end() ? 0 : l->second;
  // A candidate's rate: its outcome, else the model's (0: nothing to go on); *measured
  // says which.
  auto rate = [&](wire::Encoding e, double tol, bool* measured)
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    *measured = false;
    if (auto o = outcome_.find(OutcomeKey(peer, dataset, e, tol)); o != outcome_.end()) {
      *measured = true;
      return o->second;
    }
    if (e == plain) return link * (native_smaller ? 4.0 / native_bytes : 1.0);
    auto c = codec_.find(CodecKey(dataset, e, tol));
    if (link == 0 || c == codec_.end()) return 0.0;
    return std::min(link * c->second.ratio, c->second.rate * codec_threads_);
  };
  bool plain_measured;
  const double plain_rate = rate(plain, 0, &plain_measured);
  if (plain_rate == 0) return plain;
  wire::Encoding best = plain;
  double best_rate = plain_rate;
  for (wire::Encoding e : Candidates(tolerance)) {
    bool measured;
    const double r = rate(e, tolerance, &measured);
    const double margin = measured && plain_measured ? kOutcomeMargin : kMargin;
    if (r > margin * plain_rate && r > best_rate) {
      best = e;
      best_rate = r;
    }
  }
  return best;
}

std::vector<wire::Encoding> EncodingAdvisor::Candidates(double tolerance) {
  if (!(tolerance > 0)) return {wire::Encoding::kLossless};  // exact only
  return {wire::Encoding::kLossless, wire::Encoding::kQuantized, wire::Encoding::kInt16};
}

void EncodingAdvisor::RecordLink(const std::string& peer, uint64_t bytes, double seconds) {
  if (bytes < (1 << 20) || seconds <= 0) return;  // too little to say anything
  absl::MutexLock lock(&mu_);
  double& rate = link_[peer];
  rate = Blend(rate, static_cast<double>(bytes) / seconds);
}

std::string EncodingAdvisor::CodecKey(const std::string& dataset, wire::Encoding e,
                                      double tolerance) {
  return absl::StrCat(dataset, "\n", static_cast<int>(e), "\n",
                      e == wire::Encoding::kQuantized ? tolerance : 0);
}

std::string EncodingAdvisor::OutcomeKey(const std::string& peer, const std::string& dataset,
                                        wire::Encoding e, double tolerance) {
  return absl::StrCat(peer, "\n", CodecKey(dataset, e, tolerance));
}

void EncodingAdvisor::RecordOutcome(const std::string& peer, const std::string& dataset,
                                    wire::Encoding encoding, uint64_t float32_bytes,
                                    double seconds, double tolerance) {
  if (float32_bytes < kMinOutcomeBytes || seconds <= 0) return;
  absl::MutexLock lock(&mu_);
  double& rate = outcome_[OutcomeKey(peer, dataset, encoding, tolerance)];
  rate = Blend(rate, static_cast<double>(float32_bytes) / seconds);
}

void EncodingAdvisor::RecordCodec(const std::string& dataset, uint64_t raw, uint64_t encoded,
                                  double seconds, wire::Encoding encoding, double tolerance) {
  if (raw == 0 || encoded == 0 || seconds <= 0) return;
  absl::MutexLock lock(&mu_);
  Codec& c = codec_[CodecKey(dataset, encoding, tolerance)];
  c.ratio = Blend(c.ratio, static_cast<double>(raw) / static_cast<double>(encoded));
  c.rate = Blend(c.rate, static_cast<double>(raw) / seconds);
}

double EncodingAdvisor::link_rate(const std::string& peer) const {
  absl::MutexLock lock(&mu_);
  auto it = link_.find(peer);
  return it == link_.end() ? 0 : it->second;
}

double EncodingAdvisor::Ratio(const std::string& codec_key) const {
  absl::MutexLock lock(&mu_);
  auto it = codec_.find(codec_key);
  return it == codec_.end() ? 0 : it->second.ratio;
}

double EncodingAdvisor::lossless_ratio(const std::string& dataset) const {
  return Ratio(CodecKey(dataset, wire::Encoding::kLossless, 0));
}

double EncodingAdvisor::quantized_ratio(const std::string& dataset, double tolerance) const {
  return Ratio(CodecKey(dataset, wire::Encoding::kQuantized, tolerance));
}

}  // namespace shotstream::stream
