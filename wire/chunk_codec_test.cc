#include "wire/chunk_codec.h"

#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "grpc/slice.h"
#include "gtest/gtest.h"

namespace shotstream::wire {
namespace {

std::string Flatten(const grpc::ByteBuffer& bb) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(bb.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

TEST(ChunkEncodeTest, BytesAreAStandardShotChunkAndSamplesAreNotCopied) {
  v1::ShotChunk meta;
  meta.set_index(3);
  meta.set_shot_id(-42);
  meta.set_n_traces(2);
  meta.set_n_samples(300);
  meta.set_offset(4800);
  meta.set_total_bytes(2400);
  meta.set_last(true);
  meta.set_crc32(0xdeadbeef);
  auto* col = meta.add_headers();
  col->set_name("offset");
  col->add_values(1.5);
  col->add_values(-2);
  std::string samples(2 * 300 * 4, '\0');
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<char>(i * 7);
  const std::string expect_samples = samples;
  SampleBuffer buffer = SampleBuffer::CopyOf(samples);
  const char* data = reinterpret_cast<const char*>(buffer.data());
  grpc::ByteBuffer bb = EncodeShotChunk(meta, std::move(buffer));
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(bb.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(reinterpret_cast<const char*>(slices[1].begin()), data);  // the same buffer
  v1::ShotChunk parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(bb)));
  EXPECT_EQ(parsed.shot_id(), -42);
  EXPECT_EQ(parsed.crc32(), 0xdeadbeefu);
  EXPECT_EQ(parsed.headers(0).values(0), 1.5);
  EXPECT_EQ(parsed.samples(), expect_samples);
  v1::ShotChunk no_samples;
  no_samples.set_shot_id(1);
  ASSERT_TRUE(parsed.ParseFromString(Flatten(EncodeShotChunk(no_samples, SampleBuffer()))));
  EXPECT_EQ(parsed.shot_id(), 1);
}

TEST(ChunkDecodeTest, ReadsWhatTheServerEncodesAndWhatProtobufSerializes) {
  v1::ShotChunk meta;
  meta.set_shot_id(7);
  meta.set_n_traces(3);
  meta.set_n_samples(100000);
  meta.set_offset(12);
  meta.set_last(true);
  meta.set_crc32(99);
  auto* col = meta.add_headers();
  col->set_name("group_x");
  col->add_values(12.5);
  std::string samples(1'200'000, '\0');  // more than one 64 KiB piece
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<char>(i * 13 + 1);
  const uint32_t want_crc = static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(samples.data()), samples.size()));

  // 1. The server's zero-copy encoding (two slices).
  grpc::ByteBuffer a = EncodeShotChunk(meta, SampleBuffer::CopyOf(samples));
  // 2. A plain protobuf serialization in one slice (what the Python baseline sends).
  v1::ShotChunk full = meta;
  full.set_samples(samples);
  const std::string bytes = full.SerializeAsString();
  grpc::Slice one(bytes);
  grpc::ByteBuffer b(&one, 1);
  for (grpc::ByteBuffer* bb : {&a, &b}) {
    ReceivedChunk raw;
    ASSERT_TRUE(raw.Parse(bb).ok());
    EXPECT_EQ(raw.meta().shot_id(), 7);
    EXPECT_EQ(raw.meta().crc32(), 99u);
    EXPECT_EQ(raw.meta().headers(0).name(), "group_x");
    EXPECT_TRUE(raw.meta().samples().empty());
    ASSERT_EQ(raw.samples_size(), samples.size());
    std::string out(samples.size(), '\0');
    EXPECT_EQ(raw.CopySamples(reinterpret_cast<uint8_t*>(out.data()), 0), want_crc);
    EXPECT_EQ(out, samples);
  }
}

// Big-endian IEEE samples sent as stored (one slice per trace over file bytes) are
// swapped in the copy, also where the receiver's slices split a sample, and their CRC-32
// is that of the bytes as sent.
// Traces as a SEG-Y file holds them (a 240-byte header before each), some of them asked
// for out of file order: the samples go out in the order asked, each a slice over the
// stored bytes; traces that follow one another in memory share one reference count (no
// allocation a trace), and the memory's owner lives until the last slice goes.
TEST(ChunkEncodeTest, StoredTracesInRunsShareOneReferenceCount) {
  constexpr size_t kHeader = 240, kTraceBytes = 400, kTraces = 121;
  std::string file(kTraces * (kHeader + kTraceBytes), '\0');
  for (size_t i = 0; i < file.size(); ++i) file[i] = static_cast<char>(i * 7 + i / 251);
  auto at = [&](size_t t) {
    return reinterpret_cast<const uint8_t*>(file.data()) + t * (kHeader + kTraceBytes) + kHeader;
  };
  // Runs: 0-3; 2, 5, 6, 8 (2 lies behind 3's end; the gaps after it are under 64 KiB);
  // 120 (over 64 KiB past 8); 4.
  const std::vector<size_t> order = {0, 1, 2, 3, 2, 5, 6, 8, 120, 4};
  std::vector<const uint8_t*> traces;
  std::string want;
  for (size_t t : order) {
    traces.push_back(at(t));
    want.append(reinterpret_cast<const char*>(at(t)), kTraceBytes);
  }
  auto owner = std::make_shared<int>(0);
  std::weak_ptr<int> watch = owner;
  v1::ShotChunk meta;
  meta.set_shot_id(11);
  auto sent = std::make_unique<grpc::ByteBuffer>(
      EncodeStoredChunk(meta, traces, kTraceBytes, std::move(owner)));
  std::vector<grpc::Slice> parts;
  ASSERT_TRUE(sent->Dump(&parts).ok());
  sent.reset();
  ASSERT_EQ(parts.size(), order.size() + 1);
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(parts[i + 1].begin(), at(order[i])) << i;  // not copied
    EXPECT_EQ(parts[i + 1].size(), kTraceBytes) << i;
  }
  auto refcount = [&](size_t i) {  // the C slice's reference count, as gRPC keeps it
    grpc_slice c = parts[i + 1].c_slice();  // a reference of its own
    grpc_slice_unref(c);
    return c.refcount;
  };
  for (size_t i : {1, 2, 3}) EXPECT_EQ(refcount(i), refcount(0)) << i;
  EXPECT_NE(refcount(4), refcount(3));  // trace 2 again lies behind trace 3's end
  for (size_t i : {5, 6, 7}) EXPECT_EQ(refcount(i), refcount(4)) << i;  // gaps of a trace
  EXPECT_NE(refcount(8), refcount(7));  // trace 120: 70 KiB past trace 8
  EXPECT_NE(refcount(9), refcount(8));  // trace 4 lies behind it
  v1::ShotChunk parsed;
  std::string bytes;
  for (const grpc::Slice& p : parts) bytes.append(reinterpret_cast<const char*>(p.begin()), p.size());
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.shot_id(), 11u);
  EXPECT_EQ(parsed.samples(), want);
  // Released run by run; the owner goes with the last.
  for (size_t keep = parts.size(); keep-- > 1;) {
    EXPECT_FALSE(watch.expired()) << keep;
    parts.pop_back();
  }
  EXPECT_TRUE(watch.expired());
}

TEST(ChunkDecodeTest, BigEndianSamplesAreSwappedAcrossAnySliceSplit) {
  constexpr int kTraces = 5, kSamples = 40001;  // odd: pieces and slices fall mid-sample
  std::vector<float> want(kTraces * kSamples);
  std::vector<std::string> file_traces(kTraces);  // trace bytes as SEG-Y stores them
  std::string wire_samples;
  for (int t = 0; t < kTraces; ++t) {
    for (int i = 0; i < kSamples; ++i) {
      const float v = t * 1000.0f + i * 0.25f - 7.0f;
      want[t * kSamples + i] = v;
      uint32_t u;
      std::memcpy(&u, &v, 4);
      for (int b = 3; b >= 0; --b) file_traces[t].push_back(static_cast<char>(u >> (8 * b)));
    }
    wire_samples += file_traces[t];
  }
  v1::ShotChunk meta;
  meta.set_shot_id(3);
  meta.set_last(true);
  meta.set_big_endian(true);
  std::vector<const uint8_t*> traces;
  for (const std::string& t : file_traces) traces.push_back(reinterpret_cast<const uint8_t*>(t.data()));
  // The owner of the traces' memory is held by the slices until the last goes.
  auto owner = std::make_shared<int>(0);
  std::weak_ptr<int> watch = owner;
  auto sent = std::make_unique<grpc::ByteBuffer>(
      EncodeStoredChunk(meta, traces, kSamples * 4, std::move(owner)));
  // What protobuf sees: the samples of every trace, in order, as stored.
  std::vector<grpc::Slice> parts;
  ASSERT_TRUE(sent->Dump(&parts).ok());
  sent.reset();
  EXPECT_FALSE(watch.expired());  // `parts` still refer to the traces
  parts.pop_back();
  EXPECT_FALSE(watch.expired());
  std::vector<grpc::Slice> kept = std::move(parts);
  kept.clear();
  EXPECT_TRUE(watch.expired());
  sent = std::make_unique<grpc::ByteBuffer>(EncodeStoredChunk(meta, traces, kSamples * 4, nullptr));
  ASSERT_TRUE(sent->Dump(&parts).ok());
  ASSERT_EQ(parts.size(), kTraces + 1u);
  std::string bytes;
  for (const grpc::Slice& p : parts) bytes.append(reinterpret_cast<const char*>(p.begin()), p.size());
  v1::ShotChunk parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_TRUE(parsed.big_endian());
  EXPECT_EQ(parsed.samples(), wire_samples);
  const uint32_t want_crc = static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(wire_samples.data()), wire_samples.size()));
  // Received in slices cut at awkward places (a socket read can end anywhere).
  for (size_t cut : {size_t{1}, size_t{7}, size_t{4099}, size_t{65537}, size_t{300001}}) {
    std::vector<grpc::Slice> received;
    for (size_t at = 0; at < bytes.size(); at += cut) {
      received.emplace_back(bytes.substr(at, cut));
    }
    grpc::ByteBuffer bb(received.data(), received.size());
    ReceivedChunk raw;
    ASSERT_TRUE(raw.Parse(&bb).ok()) << cut;
    ASSERT_EQ(raw.samples_size(), wire_samples.size());
    std::vector<float> out(want.size(), -1.0f);
    EXPECT_EQ(raw.CopySamples(reinterpret_cast<uint8_t*>(out.data()), 0), want_crc) << cut;
    ASSERT_EQ(std::memcmp(out.data(), want.data(), want.size() * 4), 0) << cut;
  }
}

// A file's traces in file order, each behind its 240-byte header: to a client that takes
// trace gaps they go as one slice over the range they lie in (headers between them), and
// the client's copy skips the headers, swaps the samples and checks the samples' CRC-32
// alone, wherever its slices are cut. Traces out of order, a gap over 1/32 of a trace, or
// a client that does not take gaps: a slice a trace, as before.
TEST(ChunkDecodeTest, TracesSentWithTheGapsBetweenThemAreCopiedWithoutThem) {
  constexpr size_t kHeader = 240, kSamples = 2000, kTraceBytes = kSamples * 4, kTraces = 9;
  std::string file(kTraces * (kHeader + kTraceBytes), '\0');
  std::vector<float> want(kTraces * kSamples);
  std::string sample_bytes;  // as stored, big-endian, without the headers
  for (size_t t = 0; t < kTraces; ++t) {
    char* header = file.data() + t * (kHeader + kTraceBytes);
    for (size_t b = 0; b < kHeader; ++b) header[b] = static_cast<char>(0xF0 + t + b);
    for (size_t i = 0; i < kSamples; ++i) {
      const float v = static_cast<float>(t) * 100.0f - static_cast<float>(i) * 0.5f;
      want[t * kSamples + i] = v;
      uint32_t u;
      std::memcpy(&u, &v, 4);
      for (int b = 0; b < 4; ++b) {
        header[kHeader + 4 * i + b] = static_cast<char>(u >> (24 - 8 * b));
      }
    }
    sample_bytes.append(header + kHeader, kTraceBytes);
  }
  auto at = [&](size_t t) {
    return reinterpret_cast<const uint8_t*>(file.data()) + t * (kHeader + kTraceBytes) + kHeader;
  };
  std::vector<const uint8_t*> traces;
  for (size_t t = 0; t < kTraces; ++t) traces.push_back(at(t));
  v1::ShotChunk meta;
  meta.set_shot_id(5);
  meta.set_n_traces(kTraces);
  meta.set_n_samples(kSamples);
  meta.set_total_bytes(kTraces * kTraceBytes);
  meta.set_last(true);
  meta.set_big_endian(true);
  grpc::ByteBuffer sent = EncodeStoredChunk(meta, traces, kTraceBytes, nullptr, true);
  std::vector<grpc::Slice> parts;
  ASSERT_TRUE(sent.Dump(&parts).ok());
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].begin(), at(0));  // not copied
  const size_t payload = kTraces * (kHeader + kTraceBytes) - kHeader;
  EXPECT_EQ(parts[1].size(), payload);
  const std::string bytes = Flatten(sent);
  v1::ShotChunk parsed;  // what any protobuf client sees
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.trace_gap(), kHeader);
  EXPECT_EQ(parsed.samples(), file.substr(kHeader, payload));
  const uint32_t want_crc = static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(sample_bytes.data()), sample_bytes.size()));
  for (size_t cut : {size_t{1}, size_t{7}, size_t{238}, size_t{4099}, size_t{8241},
                     size_t{65537}, bytes.size()}) {
    std::vector<grpc::Slice> received;
    for (size_t i = 0; i < bytes.size(); i += cut) received.emplace_back(bytes.substr(i, cut));
    grpc::ByteBuffer bb(received.data(), received.size());
    ReceivedChunk raw;
    ASSERT_TRUE(raw.Parse(&bb).ok()) << cut;
    EXPECT_EQ(raw.payload_size(), payload);
    ASSERT_EQ(raw.samples_size(), kTraces * kTraceBytes);
    std::vector<float> out(want.size() + 16, -1.0f);  // and nothing written past the samples
    EXPECT_EQ(raw.CopySamples(reinterpret_cast<uint8_t*>(out.data()), 0), want_crc) << cut;
    ASSERT_EQ(std::memcmp(out.data(), want.data(), want.size() * 4), 0) << cut;
    for (size_t i = want.size(); i < out.size(); ++i) ASSERT_EQ(out[i], -1.0f) << cut;
  }
  // Little-endian samples: copied as they are, the headers skipped all the same.
  meta.set_big_endian(false);
  grpc::ByteBuffer le = EncodeStoredChunk(meta, traces, kTraceBytes, nullptr, true);
  ReceivedChunk raw;
  ASSERT_TRUE(raw.Parse(&le).ok());
  std::string out(sample_bytes.size(), '\0');
  EXPECT_EQ(raw.CopySamples(reinterpret_cast<uint8_t*>(out.data()), 0), want_crc);
  EXPECT_EQ(out, sample_bytes);
  // A slice a trace where gaps are not taken, the traces are not evenly spaced, or the
  // gap is over 1/32 of a trace.
  auto slices_of = [&](const std::vector<const uint8_t*>& ts, size_t trace_bytes, bool gaps) {
    std::vector<grpc::Slice> out_parts;
    EXPECT_TRUE(EncodeStoredChunk(meta, ts, trace_bytes, nullptr, gaps).Dump(&out_parts).ok());
    EXPECT_TRUE(parsed.ParseFromString(Flatten(EncodeStoredChunk(meta, ts, trace_bytes,
                                                                 nullptr, gaps))));
    EXPECT_EQ(parsed.trace_gap(), 0u);
    return out_parts.size() - 1;
  };
  EXPECT_EQ(slices_of(traces, kTraceBytes, false), kTraces);
  EXPECT_EQ(slices_of({at(0), at(1), at(3)}, kTraceBytes, true), 3u);
  EXPECT_EQ(slices_of({at(0), at(1)}, kTraceBytes / 8, true), 2u);  // a gap of 7000 + 240
  // Traces that follow one another (no header between: a NumPy file's) go as one slice
  // with no gap, whatever the client takes.
  const uint8_t* base = at(0);
  for (bool gaps : {false, true}) {
    std::vector<grpc::Slice> one;
    grpc::ByteBuffer bb = EncodeStoredChunk(meta, {base, base + 400, base + 800}, 400, nullptr,
                                            gaps);
    ASSERT_TRUE(bb.Dump(&one).ok());
    ASSERT_EQ(one.size(), 2u);
    EXPECT_EQ(one[1].begin(), base);
    EXPECT_EQ(one[1].size(), 1200u);
    ASSERT_TRUE(parsed.ParseFromString(Flatten(bb)));
    EXPECT_EQ(parsed.trace_gap(), 0u);
    EXPECT_EQ(parsed.samples(), file.substr(kHeader, 1200));
  }
}

TEST(ChunkDecodeTest, MalformedMessagesAreDataLoss) {
  for (const std::string& bad : {std::string("\x7a\xff", 2), std::string("\x08", 1),
                                std::string("\x7a\x10" "abc", 5), std::string("\x0f", 1)}) {
    grpc::Slice s(bad);
    grpc::ByteBuffer bb(&s, 1);
    ReceivedChunk raw;
    EXPECT_EQ(raw.Parse(&bb).code(), absl::StatusCode::kDataLoss);
  }
  // A trace gap that does not fit the samples' length, or on an encoded payload.
  v1::ShotChunk meta;
  meta.set_n_samples(10);
  meta.set_trace_gap(8);
  meta.set_samples(std::string(2 * 40 + 8 - 4, 'x'));
  v1::ShotChunk encoded = meta;
  encoded.set_samples(std::string(2 * 40 + 8, 'x'));
  encoded.set_encoding(v1::ENCODING_LOSSLESS);
  for (const v1::ShotChunk& bad : {meta, encoded}) {
    grpc::Slice s(bad.SerializeAsString());
    grpc::ByteBuffer bb(&s, 1);
    ReceivedChunk raw;
    EXPECT_EQ(raw.Parse(&bb).code(), absl::StatusCode::kDataLoss) << bad.encoding();
  }
  meta.set_samples(std::string(2 * 40 + 8, 'x'));  // two traces and the gap: fits
  grpc::Slice s(meta.SerializeAsString());
  grpc::ByteBuffer bb(&s, 1);
  ReceivedChunk raw;
  ASSERT_TRUE(raw.Parse(&bb).ok());
  EXPECT_EQ(raw.samples_size(), 80u);
}

}  // namespace
}  // namespace shotstream::wire
