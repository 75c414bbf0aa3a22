#include "server/stream/stream_plan.h"

#include "wire/sample_encoding.h"

namespace shotstream::stream {

dataset::ShotPlan PlanShots(const dataset::ShotSelection& selection, int sample_format,
                            bool zero_copy, const EncodingAdvisor* advisor,
                            const std::string& peer, const std::string& dataset) {
  dataset::ShotPlan plan;
  plan.selection = selection;
  plan.encoding = selection.encoding;
  if (plan.encoding == wire::Encoding::kAuto) {
    const int native = wire::NativeBytesPerSample(sample_format);
    // A tolerance says the caller accepts that loss: QUANTIZED and INT16 become candidates.
    plan.encoding = advisor == nullptr ? wire::Encoding::kFloat32
                                       : advisor->Choose(peer, dataset, native == 0 ? 4 : native,
                                                         selection.tolerance);
    // A stream measures the candidates it does not send now and then, so that a later one
    // can choose them.
    for (wire::Encoding e : EncodingAdvisor::Candidates(selection.tolerance)) {
      if (e != plan.encoding) plan.probes.push_back(e);
    }
    plan.bound_int16 = plan.encoding == wire::Encoding::kInt16;
  }
  plan.native = plan.encoding == wire::Encoding::kNative;
  // Stored samples go as float32 only, never re-encoded.
  const bool plain =
      plan.encoding == wire::Encoding::kFloat32 || plan.encoding == wire::Encoding::kNative;
  plan.zero_copy = !zero_copy || !plain               ? dataset::ZeroCopy::kOff
                   : selection.accept_big_endian ? dataset::ZeroCopy::kAnyByteOrder
                                                  : dataset::ZeroCopy::kLittleEndian;
  return plan;
}

}  // namespace shotstream::stream
