#include "server/dataset/dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "server/segy/test_writer.h"
#include "common/crc32.h"
#include "server/source/fake_source.h"
#include "wire/sample_encoding.h"

namespace shotstream::dataset {
namespace {

// The plan of a read: these header columns, chunks of at most `chunk` sample bytes.
ReadPlan Plan(std::vector<segy::HeaderSelector> headers, uint64_t chunk,
              ZeroCopy zero_copy = ZeroCopy::kOff) {
  ReadPlan plan;
  plan.selection.headers = std::move(headers);
  plan.selection.max_chunk_bytes = chunk;
  plan.zero_copy = zero_copy;
  return plan;
}

std::string Dir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

// The dataset `name` of the files at `paths`, read through their mappings.
absl::StatusOr<std::unique_ptr<Dataset>> LoadMapped(const std::string& name,
                                                    std::vector<std::string> paths) {
  DatasetSpec spec;
  spec.name = name;
  spec.globs = std::move(paths);
  spec.io = io::IoMode::kMmap;
  return Dataset::Load(spec);
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
  auto shot = (*d)->ReadShot(2, Plan(headers, 3 * 5 * 4 + 7));
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

  auto missing = (*d)->ReadShot(99, Plan({}, 1 << 20));
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
    auto d = LoadMapped(big ? "be" : "le", {Dir() + (big ? "/zbe.sgy" : "/zle.sgy")});
    ASSERT_TRUE(d.ok()) << d.status();
    auto decoded = (*d)->ReadShot(2, Plan(headers, 3 * kNs * 4));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_FALSE(decoded->is_stored());
    auto stored = (*d)->ReadShot(2, Plan(headers, 3 * kNs * 4, ZeroCopy::kAnyByteOrder));
    ASSERT_TRUE(stored.ok()) << stored.status();
    ASSERT_TRUE(stored->is_stored());
    ASSERT_EQ(stored->stored->size(), 4u);
    EXPECT_TRUE(stored->chunks.empty());
    EXPECT_EQ(stored->big_endian, big);
    EXPECT_EQ(stored->traces_per_chunk, 3u);
    EXPECT_EQ(stored->n_chunks(), 2u);
    EXPECT_EQ(stored->total_bytes, decoded->total_bytes);
    EXPECT_EQ(stored->headers, decoded->headers);
    // The stored bytes are the decoded samples, byte-swapped for big-endian files.
    std::string all, want;
    for (const auto& c : decoded->chunks) want.append(c.view());
    for (const uint8_t* t : stored->stored->traces()) all.append(reinterpret_cast<const char*>(t), kNs * 4);
    ASSERT_EQ(all.size(), want.size());
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(all[i], want[big ? (i ^ 3) : i]) << i;
    }
    // The CRC-32 of the stored bytes is taken when they are sent, in any split.
    const uint32_t want_crc = ::crc32(0, reinterpret_cast<const Bytef*>(all.data()), all.size());
    auto head = stored->stored->Crc(0, 3, 0);
    ASSERT_TRUE(head.ok()) << head.status();
    auto whole = stored->stored->Crc(3, 1, *head);
    ASSERT_TRUE(whole.ok()) << whole.status();
    EXPECT_EQ(*whole, want_crc);
    EXPECT_EQ(decoded->crc32, ::crc32(0, reinterpret_cast<const Bytef*>(want.data()), want.size()));
    // Little-endian only: big-endian files are decoded.
    auto le_only = (*d)->ReadShot(2, Plan({}, 1 << 20, ZeroCopy::kLittleEndian));
    ASSERT_TRUE(le_only.ok());
    EXPECT_EQ(le_only->is_stored(), !big);
  }
  // A window of under 4 KiB a trace is read decoded; from 4 KiB, located.
  {
    WriteIeeeFile(Dir() + "/zwide.sgy", segy::ByteOrder::kBigEndian, 2048);
    auto d = LoadMapped("wide", {Dir() + "/zwide.sgy"});
    ASSERT_TRUE(d.ok()) << d.status();
    for (const auto& [start, count, located] :
         {std::tuple<uint32_t, uint32_t, bool>{0, 2048, true}, {1024, 1024, true},
          {1, 1023, false}, {7, 7, false}}) {
      ReadPlan plan = Plan({}, 1 << 20, ZeroCopy::kAnyByteOrder);
      plan.selection.start = start;
      plan.selection.count = count;
      auto shot = (*d)->ReadShot(3, plan);
      ASSERT_TRUE(shot.ok()) << shot.status();
      EXPECT_EQ(shot->is_stored(), located) << start << "+" << count;
      EXPECT_EQ(shot->total_bytes, 4u * count * 4);
    }
  }
  // Not mapped (pread) or not IEEE: always decoded.
  auto always_decoded = [](const std::string& glob, io::IoMode io) {
    DatasetSpec spec;
    spec.name = "decoded";
    spec.globs = {Dir() + glob};
    spec.io = io;
    auto d = Dataset::Load(spec);
    ASSERT_TRUE(d.ok()) << d.status();
    auto shot = (*d)->ReadShot(1, Plan({}, 1 << 20, ZeroCopy::kAnyByteOrder));
    ASSERT_TRUE(shot.ok()) << shot.status();
    EXPECT_FALSE(shot->is_stored()) << glob;
    EXPECT_FALSE(shot->chunks.empty()) << glob;
  };
  always_decoded("/zbe.sgy", io::IoMode::kPread);
  WriteSurvey("zibm", kNs);  // one IBM file, one IEEE file
  always_decoded("/zibm*.sgy", io::IoMode::kMmap);
}

TEST(DatasetTest, WindowAndConditionsSelectSamplesAndTraces) {
  WriteSurvey("w", 6);
  DatasetSpec spec;
  spec.name = "w";
  spec.globs = {Dir() + "/w*.sgy"};
  auto d = Dataset::Load(spec);
  ASSERT_TRUE(d.ok()) << d.status();
  const segy::HeaderSelector offset = *segy::ResolveHeader("offset");
  ReadPlan plan = Plan({offset}, 2 * 3 * 4);
  ShotSelection& sel = plan.selection;
  sel.start = 1;
  sel.count = 3;
  sel.where = {{offset, 25, 75}, {*segy::ResolveHeader("group_x"), -1e9, 1e9}};
  for (ZeroCopy zc : {ZeroCopy::kOff, ZeroCopy::kAnyByteOrder}) {
    plan.zero_copy = zc;
    auto shot = (*d)->ReadShot(2, plan);
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
  sel.max_chunk_bytes = 1 << 20;
  plan.zero_copy = ZeroCopy::kOff;
  auto none = (*d)->ReadShot(2, plan);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->n_traces, 0u);
  EXPECT_EQ(none->total_bytes, 0u);
  ASSERT_EQ(none->n_chunks(), 1u);
  EXPECT_TRUE(none->headers[0].second.empty());
  // Outside the traces.
  sel.where.clear();
  sel.start = 4;
  sel.count = 3;
  EXPECT_EQ((*d)->ReadShot(2, plan).status().code(), absl::StatusCode::kInvalidArgument);
}

// A shot read in pieces is the shot read whole: the head has the whole shot's kept traces,
// columns and raw headers; the pieces' chunks, in order, are the whole read's, each with
// its CRC-32; for every selection (none, conditions, a window), decoded, native, stored.
TEST(DatasetTest, AShotReadInPiecesIsTheShotReadWhole) {
  WriteSurvey("p", 6);  // shot 2: 8 traces, file 0 IBM, file 1 IEEE
  auto d = LoadMapped("p", {Dir() + "/p*.sgy"});
  ASSERT_TRUE(d.ok()) << d.status();
  const segy::HeaderSelector offset = *segy::ResolveHeader("offset");
  for (int variant = 0; variant < 4; ++variant) {
    ReadPlan plan = Plan({offset, *segy::ResolveHeader("group_x")}, 2 * 6 * 4);
    plan.selection.raw_trace_headers = true;
    if (variant == 1) plan.selection.where = {{offset, 25, 150}};  // traces 1..6
    if (variant == 2) {
      plan.selection.start = 2;
      plan.selection.count = 3;
      plan.native = true;
    }
    if (variant == 3) plan.zero_copy = ZeroCopy::kAnyByteOrder;
    auto whole = (*d)->ReadShot(2, plan);
    ASSERT_TRUE(whole.ok()) << whole.status();
    // A piece of 2 chunks (4 traces of float32 at most).
    const uint64_t piece_bytes = 4 * uint64_t{whole->n_samples} * 4;
    auto head = (*d)->ReadShotHead(2, plan, piece_bytes);
    ASSERT_TRUE(head.ok()) << head.status();
    EXPECT_EQ(head->n_traces, whole->n_traces) << variant;
    EXPECT_EQ(head->total_bytes, whole->total_bytes);
    EXPECT_EQ(head->headers, whole->headers);
    EXPECT_EQ(head->trace_headers, whole->trace_headers);
    EXPECT_EQ(head->traces_per_piece, 4u);
    EXPECT_EQ(head->n_pieces(), (whole->n_traces + 3) / 4);
    std::string from_pieces, from_whole;
    auto bytes_of = [](const ShotData& s, std::string* out) {
      if (s.is_stored()) {
        for (const uint8_t* t : s.stored->traces()) {
          out->append(reinterpret_cast<const char*>(t), s.stored->trace_bytes());
        }
      }
      for (const auto& c : s.chunks) out->append(c.view());
    };
    bytes_of(*whole, &from_whole);
    for (size_t p = 0; p < head->n_pieces(); ++p) {
      auto piece = (*d)->ReadPiece(*head, p, plan);
      ASSERT_TRUE(piece.ok()) << piece.status();
      EXPECT_EQ(piece->first_trace, 4 * p);
      EXPECT_EQ(piece->n_traces, head->piece_traces(p));
      EXPECT_TRUE(piece->headers.empty()) << "the head has them";
      EXPECT_EQ(piece->encoding, whole->encoding);
      EXPECT_EQ(piece->is_stored(), whole->is_stored());
      if (!piece->is_stored()) {
        ASSERT_EQ(piece->chunk_crc32.size(), piece->chunks.size());
        for (size_t c = 0; c < piece->chunks.size(); ++c) {
          EXPECT_EQ(piece->chunk_traces[c], whole->chunk_traces[0]);
          if (piece->encoding == wire::Encoding::kFloat32) {
            EXPECT_EQ(piece->chunk_crc32[c],
                      Crc32(0, piece->chunks[c].data(), piece->chunks[c].size()));
          }
        }
      }
      bytes_of(*piece, &from_pieces);
    }
    EXPECT_EQ(from_pieces, from_whole) << variant;
  }
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
  ReadPlan plan = Plan({}, 1 << 20, ZeroCopy::kAnyByteOrder);
  plan.native = true;
  plan.selection.start = 2;
  plan.selection.count = 6;
  auto shot = (*d)->ReadShot(1, plan);
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
  plan.native = false;
  plan.zero_copy = ZeroCopy::kOff;
  auto decoded = (*d)->ReadShot(1, plan);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->encoding, wire::Encoding::kFloat32);
  EXPECT_EQ(decoded->crc32, shot->crc32);
}

// A shot sent zero copy once has its traces' CRC-32s kept and its headers checked: sent
// again with no header asked, it is located from the catalog's offsets alone. What that
// gives up, and no more: a shot key rewritten in place under the same identity (size and
// mtime kept) after the send goes unseen there, as a sample so rewritten is sent with the
// kept CRC-32 (which the client's check then fails); any read that asks for a header, or
// decodes, reads and checks the headers again.
TEST(DatasetTest, AShotSentBeforeIsLocatedAgainWithoutReadingItsHeaders) {
  const std::string path = Dir() + "/zkept.sgy";
  constexpr int kNs = 16;
  WriteIeeeFile(path, segy::ByteOrder::kBigEndian, kNs);
  auto d = LoadMapped("kept", {path});
  ASSERT_TRUE(d.ok()) << d.status();
  const ReadPlan located = Plan({}, 1 << 20, ZeroCopy::kAnyByteOrder);
  auto first = (*d)->ReadShot(2, located);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->is_stored());
  auto sent = first->stored->Crc(0, first->stored->size(), 0);  // as the stream sends it
  ASSERT_TRUE(sent.ok()) << sent.status();

  // Shot 2's first trace (trace 4) now says shot 9, its file's size and mtime kept.
  struct stat before;
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const uint8_t nine[4] = {0, 0, 0, 9};
  const uint64_t key_at = 3600 + 4 * (240 + kNs * 4) + 8;
  ASSERT_EQ(::pwrite(fd, nine, 4, static_cast<off_t>(key_at)), 4);
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::futimens(fd, times), 0);
  ::close(fd);

  io::ReadStats stats;
  auto again = (*d)->ReadShot(2, located, &stats);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(again->is_stored());
  EXPECT_EQ(again->stored->traces(), first->stored->traces());
  auto resent = again->stored->Crc(0, again->stored->size(), 0);
  ASSERT_TRUE(resent.ok());
  EXPECT_EQ(*resent, *sent);
  EXPECT_EQ(stats.reads, 1u);  // one run of 4 whole traces
  EXPECT_EQ(stats.bytes_wanted, 4u * (240 + kNs * 4));
  // A header asked for, or samples decoded: the headers are read, and the change found.
  const std::vector<segy::HeaderSelector> group_x = {*segy::ResolveHeader("group_x")};
  for (const ReadPlan& plan :
       {Plan(group_x, 1 << 20, ZeroCopy::kAnyByteOrder), Plan({}, 1 << 20)}) {
    auto checked = (*d)->ReadShot(2, plan);
    ASSERT_EQ(checked.status().code(), absl::StatusCode::kDataLoss) << checked.status();
    EXPECT_NE(checked.status().message().find("the trace header says shot 9"),
              absl::string_view::npos)
        << checked.status();
  }
  // Shot 3, never sent: its headers are read and checked as before.
  auto other = (*d)->ReadShot(3, located);
  ASSERT_TRUE(other.ok()) << other.status();
}

TEST(DatasetTest, StoredTracesOfATruncatedFileAreDataLossWhenSent) {
  const std::string path = Dir() + "/ztrunc.sgy";
  WriteIeeeFile(path, segy::ByteOrder::kBigEndian, 2048);  // traces of 8432 bytes
  auto d = LoadMapped("trunc", {path});
  ASSERT_TRUE(d.ok()) << d.status();
  auto shot = (*d)->ReadShot(3, Plan({}, 1 << 20, ZeroCopy::kAnyByteOrder));
  ASSERT_TRUE(shot.ok()) << shot.status();
  ASSERT_TRUE(shot->is_stored());
  ASSERT_EQ(::truncate(path.c_str(), 3600 + 8432), 0);  // only the first trace is left
  EXPECT_EQ(shot->stored->Touch().code(), absl::StatusCode::kDataLoss);
  auto crc = shot->stored->Crc(0, shot->stored->size(), 0);
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

}  // namespace
}  // namespace shotstream::dataset

namespace shotstream::dataset {
namespace {

// What the dataset does above any source, over a source in memory.
class DatasetOverFakeTest : public ::testing::Test {
 protected:
  // Shots 1..3 of 4 traces x 6 samples; sample = shot*1000 + trace*10 + s; offset 25 t,
  // group_x 100 t. Traces 0-1 in file 0, 2-3 in file 1.
  std::unique_ptr<source::FakeSource> MakeSource() {
    auto fake = std::make_unique<source::FakeSource>(6);
    for (int shot = 1; shot <= 3; ++shot) {
      for (uint32_t file = 0; file < 2; ++file) {
        std::vector<source::FakeTrace> traces;
        for (int k = 0; k < 2; ++k) {
          const int t = file * 2 + k;
          source::FakeTrace tr;
          for (int s = 0; s < 6; ++s) tr.samples.push_back(shot * 1000 + t * 10 + s);
          tr.fields = {{"offset", 25.0 * t}, {"group_x", 100.0 * t}};
          traces.push_back(tr);
        }
        fake->AddShot(shot, traces, file);
      }
    }
    return fake;
  }
  std::unique_ptr<Dataset> Make(std::unique_ptr<source::FakeSource> fake) {
    fake_ = fake.get();
    fake->Finish();
    DatasetSpec spec;
    spec.name = "fake";
    spec.on_files_changed = [this](const Dataset&, const absl::Status& why) {
      changes_.push_back(std::string(why.message()));
    };
    return Dataset::FromSource(spec, std::move(fake));
  }
  static std::vector<float> Samples(const ShotData& shot) {
    std::string all;
    for (const auto& c : shot.chunks) all.append(c.view());
    std::vector<float> v(all.size() / 4);
    std::memcpy(v.data(), all.data(), all.size());
    return v;
  }
  source::FakeSource* fake_ = nullptr;
  std::vector<std::string> changes_;
};

TEST_F(DatasetOverFakeTest, ConditionsWindowColumnsAndChunksWhateverTheSource) {
  auto d = Make(MakeSource());
  auto offset = d->ResolveHeader("offset");
  ASSERT_TRUE(offset.ok()) << offset.status();
  ReadPlan plan = Plan({*offset}, 2 * 2 * 4);  // 2 traces of 2 samples a chunk
  plan.selection.start = 3;
  plan.selection.count = 2;
  plan.selection.where = {{*offset, 20, 80}};
  auto shot = d->ReadShot(2, plan);
  ASSERT_TRUE(shot.ok()) << shot.status();
  EXPECT_EQ(shot->n_traces, 3u);  // traces 1, 2, 3
  EXPECT_EQ(shot->headers[0].second, (std::vector<double>{25, 50, 75}));
  EXPECT_EQ(shot->chunk_traces, (std::vector<uint32_t>{2, 1}));
  const std::vector<float> v = Samples(*shot);
  ASSERT_EQ(v.size(), 6u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(v[2 * k], 2000 + (k + 1) * 10 + 3);
    EXPECT_EQ(v[2 * k + 1], 2000 + (k + 1) * 10 + 4);
  }
  EXPECT_EQ(shot->crc32, Crc32(0, v.data(), v.size() * 4));
  // Raw headers are made by the source, in the traces kept.
  plan.selection.raw_trace_headers = true;
  auto raw = d->ReadShot(2, plan);
  ASSERT_TRUE(raw.ok());
  ASSERT_EQ(raw->trace_headers.size(), 3u * 240);
  EXPECT_EQ(static_cast<uint8_t>(raw->trace_headers[240 + 39]), 50);  // offset (37-40), trace 2
}

TEST_F(DatasetOverFakeTest, NamesOutsideTheSourcesFieldsAreRefusedNamingThem) {
  auto d = Make(MakeSource());
  auto bad = d->ResolveHeader("ofset");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("did you mean 'offset'"), absl::string_view::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("field_record, offset, group_x"), absl::string_view::npos);
  EXPECT_FALSE(d->ResolveHeader("inline").ok());  // a SEG-Y field this source does not have
}

TEST_F(DatasetOverFakeTest, AChangedFileOrAMovedShotKeyIsDataLossAndTheHookHearsIt) {
  auto source = MakeSource();
  source->SetStoredKey(3, 1, 9);
  auto d = Make(std::move(source));
  ASSERT_TRUE(d->ReadShot(1, Plan({}, 1 << 20)).ok());
  auto moved = d->ReadShot(3, Plan({}, 1 << 20));
  EXPECT_EQ(moved.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(moved.status().message().find("says shot 9 (field_record, bytes 9-12)"),
            absl::string_view::npos)
      << moved.status();
  EXPECT_EQ(changes_.size(), 1u);
  // A changed file found on another dataset: the first finding is DATA_LOSS.
  auto other = Make(MakeSource());
  fake_->MarkChanged(1);
  auto changed = other->ReadShot(1, Plan({}, 1 << 20));
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(changed.status().message().find("file 1: changed"), absl::string_view::npos);
  EXPECT_EQ(changes_.size(), 2u);
  // Without a stored shot key (array sources), only the files are checked.
  auto keyless = MakeSource();
  keyless->SetStoredKey(3, 1, 9);
  keyless->set_shot_key(std::nullopt);
  EXPECT_TRUE(Make(std::move(keyless))->ReadShot(3, Plan({}, 1 << 20)).ok());
}

TEST_F(DatasetOverFakeTest, AChangeTheReadItselfFindsStartsTheRebuildAtOnce) {
  auto d = Make(MakeSource());
  fake_->ChangeUnderRead(1);
  auto under = d->ReadShot(3, Plan({}, 1 << 20));
  EXPECT_EQ(under.status().code(), absl::StatusCode::kDataLoss) << under.status();
  EXPECT_NE(under.status().message().find("changed under the read"), absl::string_view::npos)
      << under.status();
  ASSERT_EQ(changes_.size(), 1u);  // the first detection, not a later request, told the hook
  EXPECT_NE(changes_[0].find("file 1"), absl::string_view::npos) << changes_[0];
  // A stream that started before keeps meeting the change: DATA_LOSS, never stale.
  auto later = d->ReadShot(2, Plan({}, 1 << 20));
  EXPECT_EQ(later.status().code(), absl::StatusCode::kDataLoss) << later.status();
}

TEST_F(DatasetOverFakeTest, NativeReadsTheStoredFormAndZeroCopyLocatesMappedFloats) {
  auto int16 = MakeSource();
  int16->set_form({segy::SampleFormat::kInt16, segy::ByteOrder::kBigEndian, false});
  auto d = Make(std::move(int16));
  ReadPlan native = Plan({}, 1 << 20);
  native.native = true;
  auto shot = d->ReadShot(1, native);
  ASSERT_TRUE(shot.ok()) << shot.status();
  EXPECT_EQ(shot->encoding, wire::Encoding::kNative);
  EXPECT_EQ(shot->sample_format, 3);
  ASSERT_EQ(shot->chunks.size(), 1u);
  EXPECT_EQ(shot->chunks[0].size(), 4u * 6 * 2);
  std::vector<float> v(24);
  ASSERT_TRUE(wire::DecodeSamples(wire::Encoding::kNative, 3, true, shot->chunks[0].data(),
                                  shot->chunks[0].size(), 4, 6, v.data()).ok());
  EXPECT_EQ(v[23], 1000 + 30 + 5);
  EXPECT_EQ(shot->crc32, Crc32(0, v.data(), v.size() * 4));
  // Zero copy wants mapped IEEE float32: an int16 source is decoded.
  EXPECT_FALSE(d->ReadShot(1, Plan({}, 1 << 20, ZeroCopy::kAnyByteOrder))->is_stored());

  auto floats = MakeSource();
  floats->set_form({segy::SampleFormat::kIeeeFloat32, segy::ByteOrder::kLittleEndian, true});
  auto m = Make(std::move(floats));
  auto located = m->ReadShot(2, Plan({}, 3 * 6 * 4, ZeroCopy::kLittleEndian));
  ASSERT_TRUE(located.ok()) << located.status();
  ASSERT_TRUE(located->is_stored());
  EXPECT_EQ(located->n_chunks(), 2u);
  EXPECT_EQ(located->total_bytes, 4u * 6 * 4);
  auto crc = located->stored->Crc(0, 4, 0);
  ASSERT_TRUE(crc.ok());
  auto decoded = m->ReadShot(2, Plan({}, 1 << 20));
  EXPECT_EQ(*crc, decoded->crc32);
  // Conditions keep the stored traces they select; none kept is one empty chunk.
  ReadPlan some = Plan({}, 1 << 20, ZeroCopy::kLittleEndian);
  some.selection.where = {{*m->ResolveHeader("group_x"), 150, 1e9}};
  auto two = m->ReadShot(2, some);
  ASSERT_TRUE(two->is_stored());
  EXPECT_EQ(two->stored->size(), 2u);
  some.selection.where = {{*m->ResolveHeader("group_x"), 1e6, 1e9}};
  auto none = m->ReadShot(2, some);
  EXPECT_FALSE(none->is_stored());
  EXPECT_EQ(none->n_chunks(), 1u);
  EXPECT_EQ(none->n_traces, 0u);
}

}  // namespace
}  // namespace shotstream::dataset
