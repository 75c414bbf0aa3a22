#include "wire/chunk_codec.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <vector>

#include "grpc/slice.h"
#include "common/crc32.h"
#include "common/crc32_copy.h"
#include "wire/chunk_cut.h"

namespace shotstream::wire {
namespace {

constexpr int kSamplesField = 15;     // ShotChunk.samples
constexpr int kTraceGapField = 18;    // ShotChunk.trace_gap


void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A read position across slices.
class Cursor {
 public:
  explicit Cursor(const std::vector<grpc::Slice>& slices) : slices_(slices) { Settle(); }
  bool done() const { return slice_ >= slices_.size(); }
  size_t slice() const { return slice_; }
  size_t offset() const { return offset_; }
  bool Byte(uint8_t* b) {
    if (done()) return false;
    *b = slices_[slice_].begin()[offset_++];
    Settle();
    return true;
  }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Byte(&b)) return false;
      *v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  // Moves n bytes on, appending them to `out` when not null.
  bool Skip(uint64_t n, std::string* out) {
    while (n > 0) {
      if (done()) return false;
      const size_t take = std::min<uint64_t>(n, slices_[slice_].size() - offset_);
      if (out) out->append(reinterpret_cast<const char*>(slices_[slice_].begin()) + offset_, take);
      offset_ += take;
      n -= take;
      Settle();
    }
    return true;
  }

 private:
  void Settle() {
    while (slice_ < slices_.size() && offset_ >= slices_[slice_].size()) {
      ++slice_;
      offset_ = 0;
    }
  }
  const std::vector<grpc::Slice>& slices_;
  size_t slice_ = 0;
  size_t offset_ = 0;
};

absl::Status Malformed(const char* what) {
  return absl::DataLossError(std::string("malformed ShotChunk: ") + what);
}

void DestroyBytes(void* p) { delete[] static_cast<uint8_t*>(p); }

// The serialized metadata (and a trace gap, when not 0) followed by the samples field's
// tag and length.
std::string Prefix(const v1::ShotChunk& meta, uint64_t samples_size, uint64_t trace_gap = 0) {
  std::string prefix;
  meta.SerializeToString(&prefix);  // every field but the samples (protobuf takes any order)
  if (trace_gap > 0) {
    AppendVarint(kTraceGapField << 3, &prefix);  // varint
    AppendVarint(trace_gap, &prefix);
  }
  if (samples_size == 0) return prefix;
  AppendVarint((kSamplesField << 3) | 2, &prefix);  // length-delimited
  AppendVarint(samples_size, &prefix);
  return prefix;
}

}  // namespace

grpc::ByteBuffer EncodeShotChunk(const v1::ShotChunk& meta, SampleBuffer samples) {
  const std::string prefix = Prefix(meta, samples.size());
  if (samples.empty()) {
    grpc::Slice only(prefix);
    return grpc::ByteBuffer(&only, 1);
  }
  const size_t size = samples.size();
  uint8_t* owned = samples.release();  // freed by gRPC through DestroyBytes
  grpc::Slice slices[2] = {grpc::Slice(prefix), grpc::Slice(owned, size, &DestroyBytes, owned)};
  return grpc::ByteBuffer(slices, 2);
}

namespace {

// What a chunk's stored slices hold: the memory's owner, released with the last
// reference (one a run, and EncodeStoredChunk's own while it makes them).
struct SliceKeeper {
  std::shared_ptr<const void> keep;
  std::atomic<size_t> refs;
  static void Release(void* p) {
    auto* k = static_cast<SliceKeeper*>(p);
    if (k->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete k;
  }
};

// Traces at most this far past the previous one's end (a SEG-Y trace header is 240
// bytes) share that one's run: one reference count for the run, none allocated a trace.
constexpr size_t kMaxRunGap = 64 << 10;

// Where the run that starts at traces[first] ends (one past its last trace).
size_t RunEnd(absl::Span<const uint8_t* const> traces, size_t first, size_t trace_bytes) {
  size_t last = first;
  while (last + 1 < traces.size()) {
    const uint8_t* end = traces[last] + trace_bytes;
    const uint8_t* next = traces[last + 1];
    if (next < end || static_cast<size_t>(next - end) > kMaxRunGap) break;
    ++last;
  }
  return last + 1;
}

// The gap between traces evenly spaced in memory, at most `max_gap` (0: they follow one
// another), or nullopt.
std::optional<size_t> EvenTraceGap(absl::Span<const uint8_t* const> traces,
                                   size_t trace_bytes, size_t max_gap) {
  if (traces.empty()) return std::nullopt;
  if (traces.size() == 1) return 0;
  if (traces[1] < traces[0] + trace_bytes) return std::nullopt;
  const size_t stride = static_cast<size_t>(traces[1] - traces[0]);
  if (stride - trace_bytes > max_gap) return std::nullopt;
  for (size_t i = 2; i < traces.size(); ++i) {
    if (traces[i] != traces[i - 1] + stride) return std::nullopt;
  }
  return stride - trace_bytes;
}

}  // namespace

grpc::ByteBuffer EncodeStoredChunk(const v1::ShotChunk& meta,
                                   absl::Span<const uint8_t* const> traces, size_t trace_bytes,
                                   std::shared_ptr<const void> keep, bool trace_gaps) {
  const std::optional<size_t> gap =
      EvenTraceGap(traces, trace_bytes, trace_gaps ? MaxTraceGap(trace_bytes) : 0);
  if (gap.has_value() && trace_bytes > 0) {  // one slice over the traces (and the gaps)
    const size_t size = traces.size() * (trace_bytes + *gap) - *gap;
    auto* keeper = new SliceKeeper{std::move(keep), {1}};
    grpc::Slice slices[2] = {
        grpc::Slice(Prefix(meta, size, *gap)),
        grpc::Slice(grpc_slice_new_with_user_data(const_cast<uint8_t*>(traces[0]), size,
                                                  &SliceKeeper::Release, keeper),
                    grpc::Slice::STEAL_REF)};
    return grpc::ByteBuffer(slices, 2);
  }
  std::vector<grpc::Slice> slices;
  slices.reserve(traces.size() + 1);
  slices.emplace_back(Prefix(meta, uint64_t{trace_bytes} * traces.size()));
  if (traces.empty()) return grpc::ByteBuffer(slices.data(), slices.size());
  // Runs of traces in address order, each one slice's memory with one reference count
  // (gRPC's, freed through SliceKeeper::Release); each trace is a sub-slice of its run,
  // which adds a reference and never reads the bytes (they may be read only under the
  // file's guard, before this).
  auto* keeper = new SliceKeeper{std::move(keep), {1}};
  for (size_t first = 0, end; first < traces.size(); first = end) {
    end = RunEnd(traces, first, trace_bytes);
    keeper->refs.fetch_add(1, std::memory_order_relaxed);
    const uint8_t* base = traces[first];
    const size_t run_bytes = static_cast<size_t>(traces[end - 1] - base) + trace_bytes;
    grpc_slice run = grpc_slice_new_with_user_data(const_cast<uint8_t*>(base), run_bytes,
                                                   &SliceKeeper::Release, keeper);
    for (size_t i = first; i < end; ++i) {
      const size_t at = static_cast<size_t>(traces[i] - base);
      grpc_slice trace = grpc_slice_sub_no_ref(run, at, at + trace_bytes);
      slices.emplace_back(grpc_slice_ref(trace), grpc::Slice::STEAL_REF);
    }
    grpc_slice_unref(run);  // the sub-slices hold the run from here
  }
  SliceKeeper::Release(keeper);  // this function's reference
  return grpc::ByteBuffer(slices.data(), slices.size());
}

absl::Status ReceivedChunk::Parse(grpc::ByteBuffer* bb) {
  slices_.clear();
  meta_.Clear();
  payload_size_ = 0;
  samples_size_ = 0;
  if (!bb->Dump(&slices_).ok()) return Malformed("cannot read the message");
  Cursor c(slices_);
  meta_bytes_.clear();  // kept: its capacity serves the next chunk
  while (!c.done()) {
    uint64_t tag;
    if (!c.Varint(&tag)) return Malformed("truncated tag");
    const int field = static_cast<int>(tag >> 3), wire = static_cast<int>(tag & 7);
    if (field == kSamplesField && wire == 2) {
      uint64_t len;
      if (!c.Varint(&len)) return Malformed("truncated samples length");
      samples_slice_ = c.slice();
      samples_offset_ = c.offset();
      payload_size_ = len;
      if (!c.Skip(len, nullptr)) return Malformed("samples past the end");
      continue;
    }
    // Any other field: its bytes go to protobuf as they are.
    AppendVarint(tag, &meta_bytes_);
    switch (wire) {
      case 0: {
        uint64_t v;
        if (!c.Varint(&v)) return Malformed("truncated varint");
        AppendVarint(v, &meta_bytes_);
        break;
      }
      case 1:
        if (!c.Skip(8, &meta_bytes_)) return Malformed("truncated fixed64");
        break;
      case 5:
        if (!c.Skip(4, &meta_bytes_)) return Malformed("truncated fixed32");
        break;
      case 2: {
        uint64_t len;
        if (!c.Varint(&len)) return Malformed("truncated length");
        AppendVarint(len, &meta_bytes_);
        if (!c.Skip(len, &meta_bytes_)) return Malformed("field past the end");
        break;
      }
      default:
        return Malformed("unknown wire type");
    }
  }
  if (!meta_.ParseFromString(meta_bytes_)) return Malformed("metadata does not parse");
  samples_size_ = payload_size_;
  if (const uint64_t gap = meta_.trace_gap(); gap > 0) {
    // k traces and the k - 1 gaps between them.
    const uint64_t trace_bytes = TraceBytes();
    if (meta_.encoding() != v1::ENCODING_FLOAT32 || trace_bytes == 0 ||
        (payload_size_ + gap) % (trace_bytes + gap) != 0) {
      return Malformed("trace_gap does not fit the samples' length");
    }
    samples_size_ = (payload_size_ + gap) / (trace_bytes + gap) * trace_bytes;
  }
  return absl::OkStatus();
}

namespace {

// Calls fn(p, n) for each piece of the sample bytes in `slices` from (slice, offset), in
// order: `payload` bytes in all, of which runs of `trace_bytes` samples with `gap` bytes
// skipped between them (gap 0: all samples), cut where the slices end.
template <typename Fn>
void ForEachSamplePiece(const std::vector<grpc::Slice>& slices, size_t slice, size_t offset,
                        uint64_t payload, uint64_t trace_bytes, uint64_t gap, Fn fn) {
  uint64_t take = gap > 0 ? trace_bytes : payload;  // sample bytes before the next gap
  uint64_t skip = 0;                                // gap bytes still to skip
  while (payload > 0 && slice < slices.size()) {
    const uint64_t here = std::min<uint64_t>(payload, slices[slice].size() - offset);
    const uint64_t n = std::min(here, skip > 0 ? skip : take);
    if (skip > 0) {
      skip -= n;
    } else {
      fn(slices[slice].begin() + offset, static_cast<size_t>(n));
      take -= n;
      if (take == 0) {
        take = trace_bytes;
        skip = gap;
      }
    }
    payload -= n;
    offset += n;
    if (offset == slices[slice].size()) {
      ++slice;
      offset = 0;
    }
  }
}

}  // namespace

const uint8_t* ReceivedChunk::ContiguousPayload() const {
  if (payload_size_ == 0) return nullptr;
  if (samples_slice_ >= slices_.size() ||
      slices_[samples_slice_].size() - samples_offset_ < payload_size_) {
    return nullptr;
  }
  return slices_[samples_slice_].begin() + samples_offset_;
}

void ReceivedChunk::CopyPayload(uint8_t* dst) const {
  ForEachSamplePiece(slices_, samples_slice_, samples_offset_, payload_size_, 0, 0,
                     [&](const uint8_t* p, size_t n) {
                       std::memcpy(dst, p, n);
                       dst += n;
                     });
}

uint32_t ReceivedChunk::CopySamples(uint8_t* dst, uint32_t crc) const {
  const bool swap = meta_.big_endian();
  uint8_t carry[4];  // big-endian: a sample split between two slices
  size_t carried = 0;
  ForEachSamplePiece(slices_, samples_slice_, samples_offset_, payload_size_, TraceBytes(),
                     meta_.trace_gap(), [&](const uint8_t* p, size_t n) {
    if (!swap) {  // one read of each byte: copied and checksummed together
      crc = CopyCrc32(crc, p, n, dst, samples_size_);
      dst += n;
      return;
    }
    if (carried > 0) {  // finish the split sample first
      const size_t take = std::min(4 - carried, n);
      crc = Crc32(crc, p, take);
      std::memcpy(carry + carried, p, take);
      carried += take;
      p += take;
      n -= take;
      if (carried < 4) return;
      uint32_t word;  // its bytes are in the CRC-32 already: swapped into place alone
      std::memcpy(&word, carry, 4);
      word = __builtin_bswap32(word);
      std::memcpy(dst, &word, 4);
      dst += 4;
      carried = 0;
    }
    const size_t whole = n / 4 * 4;
    crc = SwapCopyCrc32(crc, p, whole, dst, samples_size_);
    dst += whole;
    carried = n - whole;
    crc = Crc32(crc, p + whole, carried);
    std::memcpy(carry, p + whole, carried);
  });
  return crc;
}

}  // namespace shotstream::wire
