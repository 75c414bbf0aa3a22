// The golden chunk stream (client/testdata/golden_chunks.bin) through the C++ assembler:
// every shot as its originals (within its encoding's bound), with its headers; the parts
// of a pieces stream equal the whole; a flipped byte is DATA_LOSS naming the shot; and the
// chunk plan still makes the stream the file holds. client/python/wire_test.py reads the
// same file through the Python fallback's assembler.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/testdata/golden_chunks.h"
#include "gtest/gtest.h"
#include "shotstream/gpu/pinned_buffer_pool.h"
#include "wire/chunk_codec.h"
#include "wire/encoding_proto.h"
#include "client/shot_assembler.h"

namespace shotstream::golden {
namespace {

std::vector<std::string> ReadGolden() {
  std::ifstream in("client/testdata/golden_chunks.bin", std::ios::binary);
  EXPECT_TRUE(in) << "client/testdata/golden_chunks.bin missing";
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> chunks;
  size_t at = 0;
  while (at + 4 <= all.size()) {
    const auto* p = reinterpret_cast<const uint8_t*>(all.data() + at);
    const uint32_t n = p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t{p[3]} << 24);
    chunks.push_back(all.substr(at + 4, n));
    at += 4 + n;
  }
  EXPECT_EQ(at, all.size());
  return chunks;
}

absl::Status Parse(const std::string& bytes, wire::ReceivedChunk* raw) {
  grpc::Slice slice(bytes);
  grpc::ByteBuffer bb(&slice, 1);
  return raw->Parse(&bb);
}

// Assembles `chunks`; the shots (or parts) in order, or the first error.
absl::StatusOr<std::vector<wire::AssembledShot>> Assemble(const std::vector<std::string>& chunks,
                                                          gpu::PinnedBufferPool* pool,
                                                          bool pieces) {
  wire::ShotAssembler assembler(pool, /*raw_trace_headers=*/true, pieces);
  std::vector<wire::AssembledShot> out;
  wire::ReceivedChunk raw;
  for (const std::string& c : chunks) {
    if (absl::Status s = Parse(c, &raw); !s.ok()) return s;
    wire::AssembledShot shot;
    absl::StatusOr<bool> done = assembler.Add(raw, &shot);
    if (!done.ok()) return done.status();
    if (*done) out.push_back(std::move(shot));
  }
  return out;
}

TEST(GoldenChunksTest, EveryShotAssemblesToItsOriginals) {
  gpu::PinnedBufferPool pool;
  auto shots = Assemble(ReadGolden(), &pool, /*pieces=*/false);
  ASSERT_TRUE(shots.ok()) << shots.status();
  const std::vector<GoldenShot> want = GoldenShots();
  ASSERT_EQ(shots->size(), want.size());
  // The bounds as golden_chunks.txt states them (lossy ones relative to the shot's RMS).
  std::ifstream txt("client/testdata/golden_chunks.txt");
  std::vector<double> bounds;
  for (std::string line; std::getline(txt, line);) {
    if (line.empty() || line[0] == '#') continue;
    bounds.push_back(std::stod(line.substr(line.rfind(' ') + 1)));
  }
  ASSERT_EQ(bounds.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const GoldenShot& g = want[i];
    const wire::AssembledShot& s = (*shots)[i];
    SCOPED_TRACE(g.shot_id);
    EXPECT_EQ(s.shot_id, g.shot_id);
    EXPECT_EQ(s.n_traces, g.n_traces);
    EXPECT_EQ(s.n_samples, g.n_samples);
    EXPECT_EQ(s.encoding, g.encoding);
    ASSERT_EQ(s.headers.size(), 1u);
    EXPECT_EQ(s.headers[0].first, "offset");
    ASSERT_EQ(s.headers[0].second.size(), g.n_traces);
    for (uint32_t t = 0; t < g.n_traces; ++t) EXPECT_EQ(s.headers[0].second[t], 100 + 12.5 * t);
    ASSERT_EQ(s.trace_headers.size(), size_t{g.n_traces} * 240);
    for (size_t b = 0; b < s.trace_headers.size(); ++b) {
      ASSERT_EQ(static_cast<uint8_t>(s.trace_headers[b]), b % 251);
    }
    double worst = 0;
    for (uint32_t t = 0; t < g.n_traces; ++t) {
      for (uint32_t k = 0; k < g.n_samples; ++k) {
        const float got = s.samples.data()[size_t{t} * g.n_samples + k];
        worst = std::max(worst, std::abs(double{got} - GoldenSample(g.shot_id, t, k, g.divisor)));
      }
    }
    EXPECT_LE(worst, bounds[i]);
    if (bounds[i] == 0) EXPECT_EQ(worst, 0);
  }
}

TEST(GoldenChunksTest, PartsOfAPiecesStreamEqualTheWholeShots) {
  gpu::PinnedBufferPool pool;
  const std::vector<std::string> chunks = ReadGolden();
  auto whole = Assemble(chunks, &pool, false);
  auto parts = Assemble(chunks, &pool, true);
  ASSERT_TRUE(whole.ok() && parts.ok());
  EXPECT_EQ(parts->size(), chunks.size());  // every golden chunk carries its CRC-32
  size_t p = 0;
  for (const wire::AssembledShot& s : *whole) {
    uint32_t next = 0;
    do {
      ASSERT_LT(p, parts->size());
      const wire::AssembledShot& part = (*parts)[p++];
      EXPECT_EQ(part.shot_id, s.shot_id);
      EXPECT_EQ(part.first_trace, next);
      EXPECT_EQ(part.shot_traces, s.n_traces);
      EXPECT_EQ(part.headers.empty(), next != 0 || s.headers.empty());
      for (size_t i = 0; i < size_t{part.n_traces} * s.n_samples; ++i) {
        ASSERT_EQ(part.samples.data()[i], s.samples.data()[size_t{next} * s.n_samples + i]);
      }
      next += part.n_traces;
      if (part.last_piece) break;
    } while (true);
    EXPECT_EQ(next, s.n_traces);
  }
  EXPECT_EQ(p, parts->size());
}

TEST(GoldenChunksTest, AFlippedByteIsDataLossNamingTheShot) {
  gpu::PinnedBufferPool pool;
  std::vector<std::string> chunks = ReadGolden();
  for (size_t c = 0; c < chunks.size(); ++c) {
    wire::ReceivedChunk raw;
    ASSERT_TRUE(Parse(chunks[c], &raw).ok());
    if (raw.samples_size() == 0) continue;
    std::vector<std::string> bad = chunks;
    bad[c].back() ^= 0x01;  // the payload's last byte
    auto shots = Assemble(bad, &pool, false);
    ASSERT_FALSE(shots.ok()) << "chunk " << c;
    EXPECT_EQ(shots.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(absl::StrContains(shots.status().message(),
                                  absl::StrCat("shot ", raw.meta().shot_id())))
        << shots.status();
  }
}

// The plan makes the stream the file holds: the same chunks with the same metadata, and
// the same bytes wherever no library's compressor wrote them (FLOAT32, NATIVE, INT16).
TEST(GoldenChunksTest, TheChunkPlanMakesTheGoldenStream) {
  const std::vector<std::string> golden = ReadGolden();
  auto made = MakeGoldenChunks();
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_EQ(made->size(), golden.size());
  for (size_t c = 0; c < golden.size(); ++c) {
    wire::ReceivedChunk a, b;
    ASSERT_TRUE(Parse(golden[c], &a).ok());
    ASSERT_TRUE(Parse((*made)[c], &b).ok());
    v1::ShotChunk ma = a.meta(), mb = b.meta();
    const wire::Encoding e = wire::FromProto(ma.encoding());
    if (e == wire::Encoding::kZfp || e == wire::Encoding::kQuantized) {
      for (v1::ShotChunk* m : {&ma, &mb}) {  // over compressed bytes: the library's
        m->clear_chunk_crc32();
        m->clear_crc32();
      }
    }
    EXPECT_EQ(ma.SerializeAsString(), mb.SerializeAsString()) << "chunk " << c;
    if (e == wire::Encoding::kFloat32 || e == wire::Encoding::kNative ||
        e == wire::Encoding::kInt16) {
      EXPECT_EQ(golden[c], (*made)[c]) << "chunk " << c;
    }
  }
}

}  // namespace
}  // namespace shotstream::golden
