#include "server/stream/stream_plan.h"

#include "wire/sample_encoding.h"

namespace shotstream::stream {

dataset::ShotPlan PlanShots(const dataset::ShotSelection& selection, int sample_format,
                            bool zero_copy, const EncodingAdvisor* advisor,
                            const std::string& peer, const std::string& dataset) {
  dataset::ShotPlan plan;
  dataset::EncodePlan& encode = plan.encode;
  encode.encoding = selection.encoding;
  encode.tolerance = selection.tolerance;
  if (encode.encoding == wire::Encoding::kAuto) {
    const int native = wire::NativeBytesPerSample(sample_format);
    // A tolerance says the caller accepts that loss: QUANTIZED and INT16 become candidates.
    encode.encoding = advisor == nullptr
                          ? wire::Encoding::kFloat32
                          : advisor->Choose(peer, dataset, native == 0 ? 4 : native,
                                            selection.tolerance);
    // A stream measures the candidates it does not send now and then, so that a later one
    // can choose them.
    for (wire::Encoding e : EncodingAdvisor::Candidates(selection.tolerance)) {
      if (e != encode.encoding) encode.probes.push_back(e);
    }
    encode.bound_int16 = encode.encoding == wire::Encoding::kInt16;
  }
  // What is read follows from the encoding: NATIVE reads samples as stored; stored
  // float32 samples go as they are, or INT16 encodes them from the mapping in one pass
  // (either byte order: the encoder decodes them; INT16 that `auto` picked takes the
  // shot's RMS and peak in the same pass); the other encodings read decoded.
  dataset::ReadPlan& read = plan.read;
  read.selection = selection;
  read.native = encode.encoding == wire::Encoding::kNative;
  const bool plain =
      encode.encoding == wire::Encoding::kFloat32 || encode.encoding == wire::Encoding::kNative;
  const bool int16 = encode.encoding == wire::Encoding::kInt16;
  read.zero_copy = !zero_copy || !(plain || int16)          ? dataset::ZeroCopy::kOff
                   : int16 || selection.accept_big_endian ? dataset::ZeroCopy::kAnyByteOrder
                                                           : dataset::ZeroCopy::kLittleEndian;
  return plan;
}

}  // namespace shotstream::stream
