#include "server/stream/shot_pipeline.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "server/stream/shot_encoder.h"
#include "wire/sample_encoding.h"

namespace shotstream::stream {
namespace {

void ObserveLatency(WindowCounters* c, double seconds) {
  size_t b = 0;
  while (b < std::size(WindowCounters::kLatencyBuckets) &&
         seconds > WindowCounters::kLatencyBuckets[b]) {
    ++b;
  }
  c->read_latency_count[b]++;
  c->read_latency_sum_us += static_cast<int64_t>(seconds * 1e6);
}

}  // namespace

absl::StatusOr<dataset::ShotData> ShotPipeline::Read(const ShotUnit& unit, int64_t id) const {
  const bool corrupt = plan_.corrupt_shot == id && unit.piece == 0;
  dataset::ReadPlan decoded;
  if (corrupt) {  // its bytes get flipped: never sent as stored
    decoded = plan_.shot.read;
    decoded.zero_copy = dataset::ZeroCopy::kOff;
  }
  ShotReadCost cost;
  const absl::Time t0 = absl::Now();
  absl::StatusOr<dataset::ShotData> shot = ReadSource(unit, id, corrupt ? decoded : plan_.shot.read,
                                                      &cost);
  if (shot.ok() && shot->is_stored()) {
    // The first touch of the mapped pages, here on the executor, not in the writer.
    if (absl::Status touched = shot->stored->Touch(); !touched.ok()) shot = touched;
  }
  if (shot.ok()) {  // compression, here on the executor too
    if (absl::Status encoded = Encode(unit, &*shot); !encoded.ok()) shot = encoded;
  }
  if (shot.ok() && shot->is_stored()) JoinKeptCrcs(&*shot);
  if (shot.ok() && !shot->is_stored() && shot->chunk_crc32.size() != shot->chunks.size()) {
    shot = absl::InternalError(
        absl::StrCat("shot ", shot->shot_id, ": its chunks' CRC-32s are missing"));
  }
  WindowCounters* counters = plan_.counters;
  ObserveLatency(counters, absl::ToDoubleSeconds(absl::Now() - t0));
  counters->reads_issued += static_cast<int64_t>(cost.reads);
  counters->bytes_read += static_cast<int64_t>(cost.bytes_read);
  counters->bytes_wanted += static_cast<int64_t>(cost.bytes_wanted);
  if (shot.ok() && corrupt && !shot->chunks.empty() && !shot->chunks[0].empty()) {
    shot->chunks[0].data()[0] ^= 0x01;  // after its CRC-32 was taken
  }
  return shot;
}

void ShotPipeline::JoinKeptCrcs(dataset::ShotData* shot) {
  const io::StoredTraces& stored = *shot->stored;
  const size_t per = std::max<uint32_t>(shot->traces_per_chunk, 1);
  std::vector<uint32_t> crcs;
  crcs.reserve(shot->n_chunks());
  for (size_t first = 0; first < stored.size(); first += per) {
    std::optional<uint32_t> crc = stored.KeptCrc(first, std::min(per, stored.size() - first));
    if (!crc.has_value()) return;  // the window takes them all as it sends them
    crcs.push_back(*crc);
  }
  shot->chunk_crc32 = std::move(crcs);
}

absl::StatusOr<dataset::ShotData> ShotPipeline::ReadSource(const ShotUnit& unit, int64_t id,
                                                           const dataset::ReadPlan& plan,
                                                           ShotReadCost* cost) const {
  const ShotSource& source = *plan_.source;
  if (!unit.pieced) return source.ReadShot(id, plan, cost);
  if (unit.piece > 0) {
    absl::StatusOr<dataset::ShotData> shot = source.ReadPiece(*unit.head, unit.piece, plan, cost);
    if (shot.ok()) shot->head = unit.head;
    return shot;
  }
  // The shot's head, then its first piece.
  SS_ASSIGN_OR_RETURN(dataset::ShotHead head,
                      source.ReadShotHead(id, plan, plan_.piece_bytes, cost));
  auto shared = std::make_shared<const dataset::ShotHead>(std::move(head));
  absl::StatusOr<dataset::ShotData> shot = source.ReadPiece(*shared, 0, plan, cost);
  if (shot.ok()) shot->head = std::move(shared);
  return shot;
}

void ShotPipeline::Probe(const dataset::ShotData& shot) const {
  const dataset::EncodePlan& encode = plan_.shot.encode;
  const std::vector<float> probe = FirstTraces(shot, 64);
  const uint32_t n_traces = shot.n_samples == 0 ? 0 : probe.size() / shot.n_samples;
  for (wire::Encoding e : encode.probes) {
    const double accuracy =
        e == wire::Encoding::kQuantized
            ? wire::LossyAccuracy(encode.tolerance, wire::Rms(probe.data(), probe.size()))
            : 0;
    // (INT16's probe: its rate; its ratio is 2 less the scales.)
    const absl::Time t0 = absl::Now();
    auto packed = wire::EncodeSamples(e, probe.data(), n_traces, shot.n_samples, accuracy);
    if (packed.ok()) {
      plan_.advisor->RecordCodec(plan_.dataset, probe.size() * sizeof(float), packed->size(),
                                 absl::ToDoubleSeconds(absl::Now() - t0), e, encode.tolerance);
    }
  }
}

absl::Status ShotPipeline::Encode(const ShotUnit& unit, dataset::ShotData* shot) const {
  const dataset::EncodePlan& encode = plan_.shot.encode;
  if (plan_.advisor != nullptr && !encode.probes.empty() && unit.piece == 0 &&
      unit.index % kProbeEvery == 0) {
    Probe(*shot);
  }
  const uint64_t raw = shot->total_bytes;
  const absl::Time t0 = absl::Now();
  SS_RETURN_IF_ERROR(
      EncodeShot(shot, encode.encoding, encode.tolerance, executor_, encode.bound_int16));
  const wire::Encoding got = shot->encoding;
  if (plan_.advisor != nullptr && (got == wire::Encoding::kLossless ||
                                   got == wire::Encoding::kQuantized ||
                                   got == wire::Encoding::kInt16)) {
    // Chunks ran on up to the executor's threads at once: the rate of one thread is at
    // least raw over (wall time x threads).
    uint64_t encoded = 0;
    for (const SampleBuffer& c : shot->chunks) encoded += c.size();
    const size_t threads = std::min<size_t>(shot->chunks.size(),
                                            std::max(executor_->parallelism(), 1));
    plan_.advisor->RecordCodec(plan_.dataset, raw, encoded,
                               absl::ToDoubleSeconds(absl::Now() - t0) * threads, got,
                               encode.tolerance);
  }
  return absl::OkStatus();
}

}  // namespace shotstream::stream
