#include "wire/chunk_wire.h"

#include <vector>

#include "gtest/gtest.h"

namespace shotstream::service {
namespace {

std::string Flatten(const grpc::ByteBuffer& bb) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(bb.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

TEST(ChunkWireTest, BytesAreAStandardShotChunkAndSamplesAreNotCopied) {
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

}  // namespace
}  // namespace shotstream::service
