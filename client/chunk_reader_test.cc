#include "client/chunk_reader.h"

#include <zlib.h>

#include <vector>

#include "gtest/gtest.h"
#include "server/service/chunk_wire.h"

namespace shotstream::client {
namespace {

TEST(ChunkReaderTest, ReadsWhatTheServerEncodesAndWhatProtobufSerializes) {
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
  grpc::ByteBuffer a = service::EncodeShotChunk(meta, SampleBuffer::CopyOf(samples));
  // 2. A plain protobuf serialization in one slice (what the Python baseline sends).
  v1::ShotChunk full = meta;
  full.set_samples(samples);
  const std::string bytes = full.SerializeAsString();
  grpc::Slice one(bytes);
  grpc::ByteBuffer b(&one, 1);
  for (grpc::ByteBuffer* bb : {&a, &b}) {
    RawChunk raw;
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

TEST(ChunkReaderTest, MalformedMessagesAreDataLoss) {
  for (const std::string& bad : {std::string("\x7a\xff", 2), std::string("\x08", 1),
                                std::string("\x7a\x10" "abc", 5), std::string("\x0f", 1)}) {
    grpc::Slice s(bad);
    grpc::ByteBuffer bb(&s, 1);
    RawChunk raw;
    EXPECT_EQ(raw.Parse(&bb).code(), absl::StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace shotstream::client
