#include "server/dataset/dataset.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "server/segy/test_writer.h"
#include "wire/sample_encoding.h"

namespace shotstream::dataset {
namespace {

std::string Dir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

// Two files; shot s has traces t in both; sample value = shot*1000 + trace*10 + sample.
void WriteSurvey(const std::string& prefix, int ns) {
  for (int f = 0; f < 2; ++f) {
    segy::TestFileSpec spec;
    spec.format = f == 0 ? 1 : 5;
    spec.n_samples = ns;
    for (int shot = 1; shot <= 3; ++shot) {
      for (int t = 0; t < 4; ++t) {
        segy::TestTrace tr;
        const int trace = f * 4 + t;
        tr.fields = {{9, 4, shot}, {81, 4, 1000 * trace}, {71, 2, -10}, {37, 4, trace * 25}};
        for (int s = 0; s < ns; ++s) tr.samples.push_back(shot * 1000 + trace * 10 + s);
        spec.traces.push_back(tr);
      }
    }
    segy::WriteSegyFile(Dir() + "/" + prefix + std::to_string(f) + ".sgy", spec);
  }
}

TEST(DatasetTest, ReadsShotAcrossFilesWithHeadersChunksAndCrc) {
  WriteSurvey("s", 5);
  DatasetSpec spec;
  spec.name = "line1";
  spec.globs = {Dir() + "/s*.sgy"};
  auto d = Dataset::Load(spec);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->n_files(), 2u);
  EXPECT_EQ((*d)->catalog().shots().size(), 3u);
  std::vector<segy::HeaderSelector> headers = {*segy::ResolveHeader("group_x"),
                                                *segy::ResolveHeader("offset")};
  // 3 traces per chunk: 8 traces -> chunks of 3, 3, 2.
  auto shot = (*d)->ReadShot(2, headers, 3 * 5 * 4 + 7);
  ASSERT_TRUE(shot.ok()) << shot.status();
  EXPECT_EQ(shot->n_traces, 8u);
  ASSERT_EQ(shot->chunks.size(), 3u);
  EXPECT_EQ(shot->chunks[2].size(), 2u * 5 * 4);
  std::string all;
  for (const auto& c : shot->chunks) all.append(c.view());
  ASSERT_EQ(all.size(), shot->total_bytes);
  const float* v = reinterpret_cast<const float*>(all.data());
  for (int trace = 0; trace < 8; ++trace) {
    for (int s = 0; s < 5; ++s) ASSERT_EQ(v[trace * 5 + s], 2000 + trace * 10 + s);
  }
  ASSERT_EQ(shot->headers.size(), 2u);
  EXPECT_EQ(shot->headers[0].first, "group_x");
  EXPECT_DOUBLE_EQ(shot->headers[0].second[3], 300.0);  // 3000 / 10
  EXPECT_DOUBLE_EQ(shot->headers[1].second[7], 175.0);
  const uint32_t crc = ::crc32(0, reinterpret_cast<const Bytef*>(all.data()), all.size());
  EXPECT_EQ(shot->crc32, crc);

  auto missing = (*d)->ReadShot(99, {}, 1 << 20);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("99"), absl::string_view::npos);
}

// One IEEE file of 3 shots x 4 traces in `order`; sample = shot*1000 + trace*10 + s/4.
void WriteIeeeFile(const std::string& path, segy::ByteOrder order, int ns) {
  segy::TestFileSpec spec;
  spec.format = 5;
  spec.order = order;
  spec.n_samples = ns;
  for (int shot = 1; shot <= 3; ++shot) {
    for (int t = 0; t < 4; ++t) {
      segy::TestTrace tr;
      tr.fields = {{9, 4, shot}, {81, 4, 100 * t}};
      for (int s = 0; s < ns; ++s) tr.samples.push_back(shot * 1000 + t * 10 + s * 0.25);
      spec.traces.push_back(tr);
    }
  }
  segy::WriteSegyFile(path, spec);
}

TEST(DatasetTest, ZeroCopyLocatesStoredIeeeTracesInTheMappingWithTheirCrc) {
  constexpr int kNs = 7;
  WriteIeeeFile(Dir() + "/zbe.sgy", segy::ByteOrder::kBigEndian, kNs);
  WriteIeeeFile(Dir() + "/zle.sgy", segy::ByteOrder::kLittleEndian, kNs);
  const std::vector<segy::HeaderSelector> headers = {*segy::ResolveHeader("group_x")};
  for (const bool big : {true, false}) {
    DatasetSpec spec;
    spec.name = big ? "be" : "le";
    spec.globs = {Dir() + (big ? "/zbe.sgy" : "/zle.sgy")};
    spec.io = segy::IoMode::kMmap;
    auto d = Dataset::Load(spec);
    ASSERT_TRUE(d.ok()) << d.status();
    auto decoded = (*d)->ReadShot(2, headers, 3 * kNs * 4, nullptr, ZeroCopy::kOff);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_TRUE(decoded->stored.empty());
    auto stored = (*d)->ReadShot(2, headers, 3 * kNs * 4, nullptr, ZeroCopy::kAnyByteOrder);
    ASSERT_TRUE(stored.ok()) << stored.status();
    ASSERT_EQ(stored->stored.size(), 4u);
    EXPECT_TRUE(stored->chunks.empty());
    EXPECT_EQ(stored->big_endian, big);
    EXPECT_EQ(stored->traces_per_chunk, 3u);
    EXPECT_EQ(stored->n_chunks(), 2u);
    EXPECT_EQ(stored->total_bytes, decoded->total_bytes);
    EXPECT_EQ(stored->headers, decoded->headers);
    // The stored bytes are the decoded samples, byte-swapped for big-endian files.
    std::string all, want;
    for (const auto& c : decoded->chunks) want.append(c.view());
    for (const uint8_t* t : stored->stored) all.append(reinterpret_cast<const char*>(t), kNs * 4);
    ASSERT_EQ(all.size(), want.size());
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(all[i], want[big ? (i ^ 3) : i]) << i;
    }
    // The CRC-32 of the stored bytes is taken when they are sent, in any split.
    const uint32_t want_crc = ::crc32(0, reinterpret_cast<const Bytef*>(all.data()), all.size());
    const absl::Span<const uint8_t* const> located(stored->stored);
    const absl::Span<const uint32_t> files(stored->stored_file);
    auto head = (*d)->StoredCrc(2, located.subspan(0, 3), files.subspan(0, 3), kNs, 0);
    ASSERT_TRUE(head.ok()) << head.status();
    auto whole = (*d)->StoredCrc(2, located.subspan(3), files.subspan(3), kNs, *head);
    ASSERT_TRUE(whole.ok()) << whole.status();
    EXPECT_EQ(*whole, want_crc);
    EXPECT_EQ(decoded->crc32, ::crc32(0, reinterpret_cast<const Bytef*>(want.data()), want.size()));
    // Little-endian only: big-endian files are decoded.
    auto le_only = (*d)->ReadShot(2, {}, 1 << 20, nullptr, ZeroCopy::kLittleEndian);
    ASSERT_TRUE(le_only.ok());
    EXPECT_EQ(le_only->stored.empty(), big);
  }
  // Not mapped (pread) or not IEEE: always decoded.
  auto always_decoded = [](const std::string& glob, segy::IoMode io) {
    DatasetSpec spec;
    spec.name = "decoded";
    spec.globs = {Dir() + glob};
    spec.io = io;
    auto d = Dataset::Load(spec);
    ASSERT_TRUE(d.ok()) << d.status();
    auto shot = (*d)->ReadShot(1, {}, 1 << 20, nullptr, ZeroCopy::kAnyByteOrder);
    ASSERT_TRUE(shot.ok()) << shot.status();
    EXPECT_TRUE(shot->stored.empty()) << glob;
    EXPECT_FALSE(shot->chunks.empty()) << glob;
  };
  always_decoded("/zbe.sgy", segy::IoMode::kPread);
  WriteSurvey("zibm", kNs);  // one IBM file, one IEEE file
  always_decoded("/zibm*.sgy", segy::IoMode::kMmap);
}

TEST(DatasetTest, WindowAndConditionsSelectSamplesAndTraces) {
  WriteSurvey("w", 6);
  DatasetSpec spec;
  spec.name = "w";
  spec.globs = {Dir() + "/w*.sgy"};
  auto d = Dataset::Load(spec);
  ASSERT_TRUE(d.ok()) << d.status();
  const segy::HeaderSelector offset = *segy::ResolveHeader("offset");
  TraceSelection sel;
  sel.start = 1;
  sel.count = 3;
  sel.where = {{offset, 25, 75}, {*segy::ResolveHeader("group_x"), -1e9, 1e9}};
  for (ZeroCopy zc : {ZeroCopy::kOff, ZeroCopy::kAnyByteOrder}) {
    auto shot = (*d)->ReadShot(2, {offset}, 2 * 3 * 4, nullptr, zc, false, sel);
    ASSERT_TRUE(shot.ok()) << shot.status();
    ASSERT_EQ(shot->n_traces, 3u);  // traces 1, 2, 3 (offsets 25, 50, 75)
    EXPECT_EQ(shot->n_samples, 3u);
    EXPECT_EQ(shot->total_bytes, 3u * 3 * 4);
    EXPECT_EQ(shot->headers[0].second, (std::vector<double>{25, 50, 75}));
    ASSERT_EQ(shot->chunks.size(), 2u);  // 2 traces a chunk (file 0 is IBM: decoded)
    EXPECT_EQ(shot->chunk_traces, (std::vector<uint32_t>{2, 1}));
    std::string all;
    for (const auto& c : shot->chunks) all.append(c.view());
    const float* v = reinterpret_cast<const float*>(all.data());
    for (int t = 0; t < 3; ++t) {
      for (int s = 0; s < 3; ++s) EXPECT_EQ(v[t * 3 + s], 2000 + (t + 1) * 10 + s + 1);
    }
    EXPECT_EQ(shot->crc32, ::crc32(0, reinterpret_cast<const Bytef*>(all.data()), all.size()));
  }
  // A condition no trace meets: the shot comes with no trace, one empty chunk.
  sel.where = {{offset, 1e6, 2e6}};
  auto none = (*d)->ReadShot(2, {offset}, 1 << 20, nullptr, ZeroCopy::kOff, false, sel);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->n_traces, 0u);
  EXPECT_EQ(none->total_bytes, 0u);
  ASSERT_EQ(none->n_chunks(), 1u);
  EXPECT_TRUE(none->headers[0].second.empty());
  // Outside the traces.
  sel.where.clear();
  sel.start = 4;
  sel.count = 3;
  EXPECT_EQ((*d)->ReadShot(2, {}, 1 << 20, nullptr, ZeroCopy::kOff, false, sel).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DatasetTest, NativeKeepsIntegerSamplesAsStoredWithTheCrcOfTheirValues) {
  segy::TestFileSpec spec16;
  spec16.format = 3;
  spec16.n_samples = 8;
  for (int t = 0; t < 5; ++t) {
    segy::TestTrace tr;
    tr.fields = {{9, 4, 1}};
    for (int s = 0; s < 8; ++s) tr.samples.push_back(t * 100 - s);
    spec16.traces.push_back(tr);
  }
  segy::WriteSegyFile(Dir() + "/n16.sgy", spec16);
  DatasetSpec spec;
  spec.name = "n16";
  spec.globs = {Dir() + "/n16.sgy"};
  auto d = Dataset::Load(spec);
  ASSERT_TRUE(d.ok()) << d.status();
  TraceSelection sel;
  sel.native = true;
  sel.start = 2;
  auto shot = (*d)->ReadShot(1, {}, 1 << 20, nullptr, ZeroCopy::kAnyByteOrder, false, sel);
  ASSERT_TRUE(shot.ok()) << shot.status();
  EXPECT_EQ(shot->encoding, wire::Encoding::kNative);
  EXPECT_EQ(shot->sample_format, 3);
  EXPECT_TRUE(shot->big_endian);
  ASSERT_EQ(shot->chunks.size(), 1u);
  ASSERT_EQ(shot->chunks[0].size(), 5u * 6 * 2);  // 2 bytes a sample, samples 2..7
  std::vector<float> v(5 * 6);
  ASSERT_TRUE(wire::DecodeSamples(wire::Encoding::kNative, 3, true, shot->chunks[0].data(),
                                  shot->chunks[0].size(), 5, 6, v.data())
                  .ok());
  for (int t = 0; t < 5; ++t) {
    for (int s = 0; s < 6; ++s) ASSERT_EQ(v[t * 6 + s], t * 100 - (s + 2));
  }
  EXPECT_EQ(shot->crc32, ::crc32(0, reinterpret_cast<const Bytef*>(v.data()), v.size() * 4));
  // Without native: decoded float32.
  sel.native = false;
  auto decoded = (*d)->ReadShot(1, {}, 1 << 20, nullptr, ZeroCopy::kOff, false, sel);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->encoding, wire::Encoding::kFloat32);
  EXPECT_EQ(decoded->crc32, shot->crc32);
}

TEST(DatasetTest, StoredTracesOfATruncatedFileAreDataLossWhenSent) {
  const std::string path = Dir() + "/ztrunc.sgy";
  WriteIeeeFile(path, segy::ByteOrder::kBigEndian, 2048);  // traces of 8432 bytes
  DatasetSpec spec;
  spec.name = "trunc";
  spec.globs = {path};
  spec.io = segy::IoMode::kMmap;
  auto d = Dataset::Load(spec);
  ASSERT_TRUE(d.ok()) << d.status();
  auto shot = (*d)->ReadShot(3, {}, 1 << 20, nullptr, ZeroCopy::kAnyByteOrder);
  ASSERT_TRUE(shot.ok()) << shot.status();
  ASSERT_FALSE(shot->stored.empty());
  ASSERT_EQ(::truncate(path.c_str(), 3600 + 8432), 0);  // only the first trace is left
  auto crc = (*d)->StoredCrc(3, shot->stored, shot->stored_file, shot->n_samples, 0);
  ASSERT_EQ(crc.status().code(), absl::StatusCode::kDataLoss) << crc.status();
  EXPECT_NE(crc.status().message().find("ztrunc.sgy"), absl::string_view::npos);
  EXPECT_NE(crc.status().message().find("shot 3"), absl::string_view::npos);
  // Shot 3 starts at trace 8: its samples after the file header and 8 traces and a header.
  EXPECT_NE(crc.status().message().find("byte offset " + std::to_string(3600 + 8 * 8432 + 240)),
            absl::string_view::npos)
      << crc.status();
}

TEST(DatasetTest, RefusesMixedSampleCountsNamingTheFile) {
  WriteSurvey("m", 5);
  segy::TestFileSpec other;
  other.n_samples = 6;
  other.traces.resize(1);
  segy::WriteSegyFile(Dir() + "/m9.sgy", other);
  DatasetSpec spec;
  spec.name = "mixed";
  spec.globs = {Dir() + "/m*.sgy"};
  auto d = Dataset::Load(spec);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("m9.sgy"), absl::string_view::npos);
}

TEST(DatasetTest, NoMatchIsNotFound) {
  DatasetSpec spec;
  spec.name = "none";
  spec.globs = {Dir() + "/nothing-here-*.sgy"};
  EXPECT_EQ(Dataset::Load(spec).status().code(), absl::StatusCode::kNotFound);
}

TEST(DatasetTest, FlagAndNameValidation) {
  auto ok = SplitDatasetFlag("line1=/data/*.sgy");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, "line1");
  EXPECT_EQ(ok->second, "/data/*.sgy");
  EXPECT_FALSE(SplitDatasetFlag("nofiles").ok());
  EXPECT_FALSE(SplitDatasetFlag("../x=/a").ok());
  EXPECT_FALSE(ValidateDatasetName("a/b").ok());
}

}  // namespace
}  // namespace shotstream::dataset

namespace shotstream::dataset {
namespace {

uint64_t TotalReads(const Dataset& d) {
  uint64_t n = 0;
  for (size_t i = 0; i < d.n_files(); ++i) n += d.file(i).read_calls();
  return n;
}

TEST(DatasetCatalogTest, BuiltOnceThenReusedWithoutReadingTraceHeaders) {
  WriteSurvey("p", 5);
  const std::string cat_dir = Dir() + "/catalogs";
  ASSERT_EQ(system(("mkdir -p " + cat_dir).c_str()), 0);
  DatasetSpec spec;
  spec.name = "persist";
  spec.globs = {Dir() + "/p*.sgy"};
  spec.catalog_dir = cat_dir;
  spec.scan_block_bytes = 1;  // one read per trace header while building
  auto first = Dataset::Load(spec);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->catalog_origin().rfind("built, saved to", 0), 0u)
      << (*first)->catalog_origin();
  EXPECT_GE(TotalReads(**first), (*first)->catalog().n_traces());

  auto second = Dataset::Load(spec);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->catalog_origin().rfind("reused", 0), 0u) << (*second)->catalog_origin();
  // Per file: the file header and the first trace header at open, then the three
  // fingerprint reads. Nothing grows with the number of traces.
  EXPECT_EQ(TotalReads(**second), 5u * (*second)->n_files());
  EXPECT_EQ((*second)->catalog().traces(), (*first)->catalog().traces());

  // Appending a trace to a file makes the catalog stale: rebuilt, with the reason.
  segy::TestFileSpec more;
  more.format = 5;
  more.n_samples = 5;
  more.traces.resize(13);
  for (auto& t : more.traces) t.fields = {{9, 4, 4}};
  segy::WriteSegyFile(Dir() + "/p1.sgy", more);
  auto third = Dataset::Load(spec);
  ASSERT_TRUE(third.ok());
  EXPECT_NE((*third)->catalog_origin().find("rebuilt: "), std::string::npos);
  EXPECT_NE((*third)->catalog_origin().find("p1.sgy"), std::string::npos)
      << (*third)->catalog_origin();
  EXPECT_NE((*third)->catalog().Find(4), nullptr);
}

TEST(DatasetCatalogTest, CorruptCatalogIsRebuiltNeverTrusted) {
  WriteSurvey("q", 5);
  const std::string cat_dir = Dir() + "/catalogs2";
  ASSERT_EQ(system(("mkdir -p " + cat_dir).c_str()), 0);
  DatasetSpec spec;
  spec.name = "corrupt";
  spec.globs = {Dir() + "/q*.sgy"};
  spec.catalog_dir = cat_dir;
  ASSERT_TRUE(Dataset::Load(spec).ok());
  const std::string path = cat_dir + "/corrupt.catalog";
  FILE* f = fopen(path.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  fseek(f, 60, SEEK_SET);
  fputc(0x5a, f);
  fclose(f);
  auto again = Dataset::Load(spec);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again.value()->catalog_origin().find("corrupt catalog"), std::string::npos)
      << again.value()->catalog_origin();
  EXPECT_EQ(again.value()->catalog().shots().size(), 3u);
}

}  // namespace
}  // namespace shotstream::dataset
