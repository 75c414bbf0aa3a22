// PlanShots: how every shot of a stream is read and encoded, decided once when the stream
// starts, in this one place: the encoding (ENCODING_AUTO resolved by the advisor for this
// peer and dataset), whether integer and IBM samples travel as stored, and whether IEEE
// samples of mapped files go out from the mapping (zero copy).
//
// Thread-safe (the advisor is).
#ifndef SHOTSTREAM_SERVER_STREAM_STREAM_PLAN_H_
#define SHOTSTREAM_SERVER_STREAM_STREAM_PLAN_H_

#include <string>

#include "server/dataset/shot_plan.h"
#include "server/stream/encoding_advisor.h"

namespace shotstream::stream {

// `sample_format`: the dataset's stored SEG-Y format code (what NATIVE would send);
// `zero_copy`: the server allows sending from mappings (--zero_copy); `advisor` may be
// null where the selection's encoding is not kAuto.
dataset::ShotPlan PlanShots(const dataset::ShotSelection& selection, int sample_format,
                            bool zero_copy, const EncodingAdvisor* advisor,
                            const std::string& peer, const std::string& dataset);

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_STREAM_PLAN_H_
