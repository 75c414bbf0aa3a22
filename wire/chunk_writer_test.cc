#include "wire/chunk_writer.h"

#include <zlib.h>

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "wire/chunk_cut.h"

namespace shotstream::wire {
namespace {

uint32_t Crc(const std::vector<float>& v, size_t first, size_t n) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(v.data() + first), n * sizeof(float)));
}

ShotFrame Frame(int64_t id, uint32_t traces, uint32_t samples, Encoding e) {
  ShotFrame f;
  f.index = static_cast<uint32_t>(id);
  f.shot_id = id;
  f.n_traces = traces;
  f.n_samples = samples;
  f.sample_interval_us = 2000;
  f.encoding = e;
  return f;
}

// A shot of 5 traces in chunks of 2, 2 and 1: each chunk lies where PlaceChunk finds it,
// carries its own CRC-32, and the last the CRC-32 of the whole shot's samples.
TEST(ChunkWriterTest, ChunksLieInOrderAndTheLastCarriesTheShotsCrc) {
  const uint32_t n_samples = 7;
  std::vector<float> samples(5 * n_samples);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = 0.25f * static_cast<float>(i) - 3;
  ChunkWriter writer;
  const ShotFrame frame = Frame(11, 5, n_samples, Encoding::kFloat32);
  const uint32_t cut[] = {2, 2, 1};
  uint32_t first = 0;
  for (int c = 0; c < 3; ++c) {
    v1::ShotChunk meta;
    const uint64_t payload = uint64_t{cut[c]} * n_samples * sizeof(float);
    writer.Frame(frame, c == 0, cut[c], payload, c == 2, &meta);
    writer.Seal(Crc(samples, first * n_samples, cut[c] * n_samples), &meta);
    absl::StatusOr<ChunkPlace> place = PlaceChunk(meta, 5, n_samples, payload);
    ASSERT_TRUE(place.ok()) << place.status();
    EXPECT_EQ(place->first_trace, first);
    EXPECT_EQ(place->traces, cut[c]);
    EXPECT_EQ(meta.chunk_crc32(), Crc(samples, first * n_samples, cut[c] * n_samples));
    EXPECT_EQ(meta.last(), c == 2);
    if (c == 2) {
      EXPECT_EQ(meta.crc32(), Crc(samples, 0, samples.size()));
    } else {
      EXPECT_EQ(meta.crc32(), 0u);  // only the last chunk says the shot's
    }
    first += cut[c];
  }
  EXPECT_EQ(writer.traces_framed(), 5u);
}

// The next shot starts at trace 0 with a CRC of its own, after a shot sent whole.
TEST(ChunkWriterTest, EachShotStartsAfresh) {
  std::vector<float> a(6, 1.5f), b(4, -2.0f);
  ChunkWriter writer;
  v1::ShotChunk meta;
  writer.Frame(Frame(1, 3, 2, Encoding::kFloat32), true, 3, a.size() * 4, true, &meta);
  writer.Seal(Crc(a, 0, a.size()), &meta);
  EXPECT_EQ(meta.crc32(), Crc(a, 0, a.size()));
  writer.Frame(Frame(2, 2, 2, Encoding::kFloat32), true, 2, b.size() * 4, true, &meta);
  writer.Seal(Crc(b, 0, b.size()), &meta);
  EXPECT_EQ(meta.offset(), 0u);
  EXPECT_EQ(meta.shot_id(), 2);
  EXPECT_EQ(meta.crc32(), Crc(b, 0, b.size()));
}

// A lossy chunk's CRC-32 covers the bytes it carries, not the float32 it stands for: the
// shot's CRC-32 is the CRC-32 of the carried bytes joined.
TEST(ChunkWriterTest, ALossyShotsCrcJoinsTheBytesCarried) {
  const std::vector<uint8_t> first = {1, 2, 3, 4, 5}, second = {6, 7, 8};
  auto crc_of = [](const std::vector<uint8_t>& v) {
    return static_cast<uint32_t>(crc32(0, v.data(), v.size()));
  };
  ChunkWriter writer;
  v1::ShotChunk meta;
  const ShotFrame frame = Frame(3, 4, 100, Encoding::kQuantized);
  writer.Frame(frame, true, 2, first.size(), false, &meta);
  EXPECT_EQ(meta.chunk_traces(), 2u);
  writer.Seal(crc_of(first), &meta);
  writer.Frame(frame, false, 2, second.size(), true, &meta);
  EXPECT_EQ(meta.offset(), 2u * 100 * sizeof(float));
  writer.Seal(crc_of(second), &meta);
  std::vector<uint8_t> both = first;
  both.insert(both.end(), second.begin(), second.end());
  EXPECT_EQ(meta.crc32(), crc_of(both));
}

// The chunk cut: whole traces, at least one, however small the limit.
TEST(ChunkCutTest, WholeTracesAtLeastOne) {
  EXPECT_EQ(TracesPerChunk(1 << 20, 4000), 262u);
  EXPECT_EQ(TracesPerChunk(8000, 4000), 2u);
  EXPECT_EQ(TracesPerChunk(7999, 4000), 1u);
  EXPECT_EQ(TracesPerChunk(100, 4000), 1u);  // a trace over the limit goes alone
  EXPECT_EQ(TracesPerChunk(100, 0), 100u);   // (no samples: never a division by zero)
}

// Traces that may go with gaps of up to 1/32 of a trace between them: the chunk, gaps
// and all, stays within the limit, and is as large as that allows.
TEST(ChunkCutTest, GappedChunksStayWithinTheLimit) {
  EXPECT_EQ(MaxTraceGap(16000), 500u);
  EXPECT_EQ(TracesPerGappedChunk(1 << 20, 16000), 63u);  // 63 x 16000 + 62 x 500 bytes
  EXPECT_EQ(TracesPerGappedChunk(100, 4000), 1u);
  EXPECT_EQ(TracesPerGappedChunk(100, 0), 100u);
  for (uint64_t limit : {uint64_t{1} << 20, uint64_t{100000}, uint64_t{8191}}) {
    for (uint64_t trace_bytes = 4; trace_bytes <= 40000; trace_bytes += 4) {
      const uint64_t k = TracesPerGappedChunk(limit, trace_bytes);
      const uint64_t gap = MaxTraceGap(trace_bytes);
      if (k > 1) {
        ASSERT_LE(k * trace_bytes + (k - 1) * gap, limit) << trace_bytes;
      }
      ASSERT_GT((k + 1) * trace_bytes + k * gap, limit) << trace_bytes;
    }
  }
}

}  // namespace
}  // namespace shotstream::wire
