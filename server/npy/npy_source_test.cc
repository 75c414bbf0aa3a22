// The NumPy source on its own: .npy files written here (npy::FormatNpyHeader), opened
// through the Format, read decoded, as stored and located.
#include "server/npy/npy_source.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "npy/npy_header.h"
#include "server/env/fault_env.h"
#include "server/env/mem_env.h"
#include "server/source/float_read.h"

namespace shotstream::npy {
namespace {

std::string Dir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

// A C-order array of `descr` and `shape` whose i-th value is i (as that type).
template <typename T>
std::string WriteNpy(const std::string& name, const std::string& descr,
                     const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  std::vector<T> values(n);
  for (uint64_t i = 0; i < n; ++i) values[i] = static_cast<T>(i);
  const std::string path = Dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  const std::string header = FormatNpyHeader(descr, shape);
  std::fwrite(header.data(), 1, header.size(), f);
  std::fwrite(values.data(), sizeof(T), n, f);
  std::fclose(f);
  return path;
}

absl::StatusOr<std::unique_ptr<source::Source>> Open(std::vector<std::string> paths,
                                                     std::string key = "field_record") {
  source::SourceSpec spec;
  spec.dataset = "npy";
  spec.paths = std::move(paths);
  spec.shot_key = std::move(key);
  spec.io = io::IoMode::kMmap;
  spec.sample_interval_us = 500;
  return NpyFormat().open(spec);
}

TEST(NpySourceTest, ShotsByPositionAcrossFilesWithPositionHeaders) {
  auto s = Open({WriteNpy<float>("a.npy", "<f4", {2, 3, 4}), WriteNpy<float>("b.npy", "<f4", {1, 3, 4})});
  ASSERT_TRUE(s.ok()) << s.status();
  const source::SourceInfo& info = (*s)->info();
  EXPECT_EQ(info.format, "npy");
  EXPECT_EQ(info.n_samples, 4u);
  EXPECT_EQ(info.sample_interval_us, 500);
  EXPECT_FALSE(info.shot_key.has_value());
  EXPECT_EQ(info.header_fields, (std::vector<std::string>{"field_record", "trace_number"}));
  ASSERT_EQ((*s)->catalog().shots().size(), 3u);  // 1, 2 in a.npy, 3 in b.npy
  const auto third = (*s)->catalog().TracesOf(*(*s)->catalog().Find(3));
  ASSERT_EQ(third.size(), 3u);
  EXPECT_EQ(third[0].file_id, 1u);
  source::FloatRead f(2, (*s)->catalog().TracesOf(*(*s)->catalog().Find(2)), 0, 4);
  const source::TraceRead& read = f.read;
  auto r = (*s)->Read(read);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(f.out[0], 12);  // shot 2 of a.npy starts at value 12
  EXPECT_EQ(f.out[11], 23);
  segy::HeaderSelector fr, tn;
  fr.name = "field_record";
  tn.name = "trace_number";
  EXPECT_EQ(r->headers->Value(1, fr), 2);
  EXPECT_EQ(r->headers->Value(2, tn), 3);
  uint8_t h[240];
  r->headers->BigEndianHeader(2, h);
  EXPECT_EQ(segy::ReadHeaderInt(h, 9, 4, segy::ByteOrder::kBigEndian), 2);
  EXPECT_EQ(segy::ReadHeaderInt(h, 13, 4, segy::ByteOrder::kBigEndian), 3);
  EXPECT_EQ(segy::ReadHeaderInt(h, 115, 2, segy::ByteOrder::kBigEndian), 4);
  // float32 little-endian in a mapping: zero copy.
  auto form = (*s)->FormOf(read.traces);
  ASSERT_TRUE(form.has_value());
  EXPECT_TRUE(form->mapped);
  EXPECT_EQ(form->byte_order, segy::ByteOrder::kLittleEndian);
}

TEST(NpySourceTest, IntegersAreStoredFormsAndOneShotAFileFor2D) {
  auto s = Open({WriteNpy<int16_t>("i1.npy", ">i2", {5, 3}), WriteNpy<int16_t>("i2.npy", ">i2", {2, 3})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->catalog().shots().size(), 2u);
  EXPECT_EQ((*s)->catalog().Find(1)->n_traces, 5u);
  EXPECT_EQ((*s)->info().sample_format, 3);
  auto form = (*s)->FormOf((*s)->catalog().TracesOf(*(*s)->catalog().Find(2)));
  ASSERT_TRUE(form.has_value());
  EXPECT_EQ(form->format, segy::SampleFormat::kInt16);
  EXPECT_EQ(form->byte_order, segy::ByteOrder::kBigEndian);
}

// The same arrays in memory (MemEnv), mapped, and a file shortened under a read.
TEST(NpySourceTest, ArraysInAnEnvInMemoryAndAFileCutUnderARead) {
  env::MemEnv mem;
  env::FaultEnv env(&mem);
  mem.Put("/arrays/a.npy", *env::ReadFileToString(env::Env::Default(),
                                                  WriteNpy<float>("ma.npy", "<f4", {2, 3, 4})));
  source::SourceSpec spec;
  spec.dataset = "npy";
  spec.paths = {"/arrays/a.npy"};
  spec.io = io::IoMode::kPread;
  spec.sample_interval_us = 500;
  spec.env = &env;
  auto s = NpyFormat().open(spec);
  ASSERT_TRUE(s.ok()) << s.status();
  source::FloatRead f(2, (*s)->catalog().TracesOf(*(*s)->catalog().Find(2)), 0, 4);
  const source::TraceRead& read = f.read;
  ASSERT_TRUE((*s)->Read(read).ok());
  for (int i = 0; i < 12; ++i) ASSERT_EQ(f.out[i], 12 + i);
  env.Inject(env::Fault::kChangedUnderRead, "a.npy", 0, 1,
             [&] { ASSERT_TRUE(mem.Truncate("/arrays/a.npy", 200).ok()); });
  const absl::Status cut = (*s)->Read(read).status();
  EXPECT_EQ(cut.code(), absl::StatusCode::kDataLoss) << cut;
  EXPECT_NE(cut.message().find("/arrays/a.npy"), std::string::npos) << cut;
}

TEST(NpySourceTest, ErrorsNameTheFileAndTheReason) {
  auto rank = Open({WriteNpy<float>("r3.npy", "<f4", {1, 2, 3}), WriteNpy<float>("r2.npy", "<f4", {2, 3})});
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("r2.npy is a 2D array"), absl::string_view::npos)
      << rank.status();
  EXPECT_EQ(Open({WriteNpy<float>("k.npy", "<f4", {2, 3})}, "inline").status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string junk = Dir() + "/junk.npy";
  std::FILE* f = std::fopen(junk.c_str(), "wb");
  std::fputs("not numpy at all", f);
  std::fclose(f);
  auto bad = Open({junk});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no \\x93NUMPY magic"), absl::string_view::npos)
      << bad.status();
  EXPECT_TRUE(NpyFormat().claims(junk, {}));  // by its name
  const uint8_t magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  EXPECT_TRUE(NpyFormat().claims("/x/data.bin", absl::MakeConstSpan(magic)));
  EXPECT_FALSE(NpyFormat().claims("/x/data.bin", {}));
}

}  // namespace
}  // namespace shotstream::npy
