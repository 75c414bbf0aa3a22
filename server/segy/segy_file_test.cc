#include "server/segy/segy_file.h"

#include <cstdio>
#include <vector>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "server/segy/test_writer.h"

namespace shotstream::segy {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

TestFileSpec Spec(int format, ByteOrder order, uint32_t ns, int n_traces) {
  TestFileSpec s;
  s.format = format;
  s.order = order;
  s.n_samples = ns;
  s.interval_us = 2000;
  for (int t = 0; t < n_traces; ++t) {
    TestTrace tr;
    tr.fields.push_back({9, 4, 100 + t / 2});
    for (uint32_t i = 0; i < ns; ++i) tr.samples.push_back(static_cast<float>(t * 10 + i));
    s.traces.push_back(tr);
  }
  return s;
}

TEST(SegyFileTest, ParsesBigEndianIeee) {
  const std::string path = TempPath("be5.sgy");
  WriteSegyFile(path, Spec(5, ByteOrder::kBigEndian, 50, 6));
  auto f = OpenSegyFile(path);
  ASSERT_TRUE(f.ok()) << f.status();
  const io::TraceLayout& l = (*f)->layout();
  EXPECT_EQ(l.byte_order, ByteOrder::kBigEndian);
  EXPECT_EQ(l.format, SampleFormat::kIeeeFloat32);
  EXPECT_EQ(l.n_samples, 50u);
  EXPECT_EQ(l.sample_interval_us, 2000.0);
  EXPECT_EQ(l.n_traces, 6u);
  EXPECT_EQ(l.first_trace_offset, 3600u);
  EXPECT_EQ(l.trace_bytes, 240u + 200u);
}

TEST(SegyFileTest, DetectsLittleEndianFromFormatCode) {
  for (int format : {1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 15, 16}) {
    const std::string path = TempPath("le.sgy");
    WriteSegyFile(path, Spec(format, ByteOrder::kLittleEndian, 7, 3));
    auto f = OpenSegyFile(path);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)->layout().byte_order, ByteOrder::kLittleEndian) << format;
    EXPECT_EQ(static_cast<int>((*f)->layout().format), format);
    EXPECT_EQ((*f)->layout().n_traces, 3u);
  }
}

TEST(SegyFileTest, ByteOrderWordWinsAndOverrideWorks) {
  auto spec = Spec(5, ByteOrder::kLittleEndian, 4, 2);
  spec.write_order_word = true;
  auto bytes = MakeSegyBytes(spec);
  auto l = ParseSegyHeaders("x.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->byte_order, ByteOrder::kLittleEndian);
  OpenOptions force_be;
  force_be.byte_order = ByteOrder::kBigEndian;
  auto wrong = ParseSegyHeaders("x.sgy", bytes.data(), bytes.size(), bytes.size(), force_be);
  EXPECT_FALSE(wrong.ok());  // format code 0x0500 is not a format
}

TEST(SegyFileTest, Rev2ExtendedSampleCount) {
  auto spec = Spec(5, ByteOrder::kBigEndian, 70000, 2);
  auto bytes = MakeSegyBytes(spec);
  auto l = ParseSegyHeaders("x.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->n_samples, 70000u);
  EXPECT_EQ(l->n_traces, 2u);
}

TEST(SegyFileTest, ErrorsNameFileByteAndReason) {
  auto spec = Spec(5, ByteOrder::kBigEndian, 10, 3);
  auto bytes = MakeSegyBytes(spec);
  // Truncated: the last trace is cut.
  auto cut = ParseSegyHeaders("cut.sgy", bytes.data(), bytes.size(), bytes.size() - 7, {});
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("cut.sgy"), absl::string_view::npos);
  EXPECT_NE(cut.status().message().find("left over"), absl::string_view::npos);
  // Format 4 (obsolete fixed point with gain) is read: 4 bytes a sample.
  bytes[3224] = 0;
  bytes[3225] = 4;
  auto f4 = ParseSegyHeaders("f4.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_TRUE(f4.ok()) << f4.status();
  EXPECT_EQ(f4->format, SampleFormat::kFixedPointGain);
  EXPECT_EQ(f4->n_traces, 3u);
  // Garbage format code in both orders.
  bytes[3224] = 0x7f;
  bytes[3225] = 0x7f;
  auto junk = ParseSegyHeaders("j.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_FALSE(junk.ok());
  // Zero samples in the binary header: the trace header's count (115-116) is used.
  bytes[3224] = 0;
  bytes[3225] = 5;
  bytes[3220] = bytes[3221] = 0;
  auto from_trace = ParseSegyHeaders("z.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_TRUE(from_trace.ok()) << from_trace.status();
  EXPECT_EQ(from_trace->n_samples, 10u);
  // Zero everywhere.
  bytes[3600 + 114] = bytes[3600 + 115] = 0;
  auto zero = ParseSegyHeaders("z.sgy", bytes.data(), bytes.size(), bytes.size(), {});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("3221"), absl::string_view::npos);
  // Shorter than the file header.
  auto tiny = ParseSegyHeaders("t.sgy", bytes.data(), 100, 100, {});
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.status().message().find("3600"), absl::string_view::npos);
}

TEST(SegyFileTest, MissingFileIsNotFound) {
  auto f = OpenSegyFile(TempPath("does-not-exist.sgy"));
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shotstream::segy

namespace shotstream::segy {
namespace {

void Put16(std::vector<uint8_t>* b, size_t at, uint16_t v) {
  (*b)[at] = static_cast<uint8_t>(v >> 8);
  (*b)[at + 1] = static_cast<uint8_t>(v);
}

absl::StatusOr<SegyLayout> Parse(const std::string& name, const std::vector<uint8_t>& b) {
  return ParseSegyHeaders(name, b.data(), b.size(), b.size(), {});
}

bool Says(const absl::Status& s, absl::string_view what) {
  return s.message().find(what) != absl::string_view::npos;
}

bool NotesSay(const SegyLayout& l, absl::string_view what) {
  for (const std::string& n : l.notes) {
    if (absl::string_view(n).find(what) != absl::string_view::npos) return true;
  }
  return false;
}

// The length rule: the binary header's count and the format fix the trace size when the
// file size agrees, whatever the trace headers say; otherwise the first trace header's
// count, if it makes the sizes add up (with a note); otherwise a refusal naming the byte.
TEST(SegyFileTest, TraceLengthFollowsTheBinaryHeaderWhenTheFileSizeAgrees) {
  for (uint16_t trace_ns : {0, 7, 3, 65535}) {
    SCOPED_TRACE(trace_ns);
    auto bytes = MakeSegyBytes(Spec(5, ByteOrder::kBigEndian, 5, 4));
    for (int t = 0; t < 4; ++t) Put16(&bytes, 3600 + t * (240 + 20) + 114, trace_ns);
    auto l = Parse("fixed.sgy", bytes);
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->n_samples, 5u);
    EXPECT_EQ(l->n_traces, 4u);
    EXPECT_TRUE(l->notes.empty()) << l->notes.front();
  }
}

TEST(SegyFileTest, FirstTraceHeaderCountIsUsedOnlyWhenTheBinaryOneDoesNotFit) {
  auto bytes = MakeSegyBytes(Spec(5, ByteOrder::kBigEndian, 6, 5));  // traces of 264 bytes
  Put16(&bytes, 3220, 11);  // binary header: 11 samples (284-byte traces: 1320 % 284 != 0)
  auto l = Parse("th.sgy", bytes);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->n_samples, 6u);
  EXPECT_EQ(l->n_traces, 5u);
  EXPECT_TRUE(NotesSay(*l, "binary header (bytes 3221-3222), 11, does not divide"));
  EXPECT_TRUE(NotesSay(*l, "6 from the first trace header (bytes 115-116)"));
  // Neither count fits: refused, naming the byte where whole traces stop.
  Put16(&bytes, 3600 + 114, 13);
  auto none = Parse("none.sgy", bytes);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Says(none.status(), "none.sgy: byte 4736")) << none.status();  // 3600 + 4 * 284
  EXPECT_TRUE(Says(none.status(), "no other sample count in the headers fits"));
}

TEST(SegyFileTest, StrayTrailingByteAndTruncatedLastTraceAreRefusedNamingTheByte) {
  auto bytes = MakeSegyBytes(Spec(5, ByteOrder::kBigEndian, 6, 3));
  auto stray = bytes;
  stray.push_back(0);
  auto s = Parse("stray.sgy", stray);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Says(s.status(), "stray.sgy: byte 4392")) << s.status();  // 3600 + 3 * 264
  EXPECT_TRUE(Says(s.status(), "1 bytes left over"));
  auto cut = bytes;
  cut.resize(cut.size() - 10);
  auto c = Parse("cut.sgy", cut);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Says(c.status(), "cut.sgy: byte 4128")) << c.status();  // 3600 + 2 * 264
  EXPECT_TRUE(Says(c.status(), "254 bytes left over"));
}

TEST(SegyFileTest, RevisionWordsThatAreNoRevisionReadAsRev1) {
  for (uint16_t word : {0x0064, 0xffff, 0x0203, 0x0001, 0x0002}) {
    SCOPED_TRACE(word);
    auto bytes = MakeSegyBytes(Spec(5, ByteOrder::kBigEndian, 6, 3));
    Put16(&bytes, 3500, word);
    Put16(&bytes, 3506, 0x1234);  // rev 2's additional header count: garbage in rev 1
    Put16(&bytes, 3268, 0x7777);  // rev 2's extended sample count: likewise
    auto l = Parse("rev.sgy", bytes);
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->n_samples, 6u);
    EXPECT_EQ(l->n_traces, 3u);
    EXPECT_EQ(l->trace_headers_per_trace, 1);
    EXPECT_TRUE(NotesSay(*l, "not a SEG-Y revision; read as rev 1"));
  }
  // Real revision words: no note.
  for (uint16_t word : {0x0000, 0x0100, 0x0200, 0x0201}) {
    auto bytes = MakeSegyBytes(Spec(5, ByteOrder::kBigEndian, 6, 3));
    Put16(&bytes, 3500, word);
    auto l = Parse("rev.sgy", bytes);
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_TRUE(l->notes.empty()) << word;
  }
  // A rev 2 word whose additional trace header count does not fit the file: read with
  // one header per trace, and said.
  auto bytes = MakeSegyBytes(Spec(5, ByteOrder::kBigEndian, 6, 3));
  Put16(&bytes, 3500, 0x0200);
  Put16(&bytes, 3506, 1);
  auto l = Parse("rev2.sgy", bytes);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->trace_headers_per_trace, 1);
  EXPECT_EQ(l->n_traces, 3u);
  EXPECT_TRUE(NotesSay(*l, "1 additional trace headers"));
}

TEST(SegyFileTest, SampleIntervalFromTheTraceHeaderWhenTheBinaryOneIsZero) {
  auto bytes = MakeSegyBytes(Spec(5, ByteOrder::kBigEndian, 6, 2));
  Put16(&bytes, 3216, 0);
  Put16(&bytes, 3600 + 116, 1500);
  auto l = Parse("dt.sgy", bytes);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->sample_interval_us, 1500.0);
}

TEST(SegyFileTest, AsciiAndEbcdicTextualHeadersAlike) {
  for (bool ascii : {false, true}) {
    auto bytes = MakeSegyBytes(Spec(5, ByteOrder::kBigEndian, 6, 2));
    const std::string text = "C 1 CLIENT SHOTSTREAM   ((SEG: EndText))";
    // One extended textual header, count -1: found by its end stanza in either encoding.
    std::vector<uint8_t> record(3200, ascii ? ' ' : 0x40);
    for (size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      uint8_t e = 0x40;
      if (c >= 'A' && c <= 'I') e = 0xC1 + (c - 'A');
      if (c >= 'J' && c <= 'R') e = 0xD1 + (c - 'J');
      if (c >= 'S' && c <= 'Z') e = 0xE2 + (c - 'S');
      if (c >= 'a' && c <= 'i') e = 0x81 + (c - 'a');
      if (c >= 'j' && c <= 'r') e = 0x91 + (c - 'j');
      if (c >= 's' && c <= 'z') e = 0xA2 + (c - 's');
      if (c == '(') e = 0x4D;
      if (c == ')') e = 0x5D;
      if (c == ':') e = 0x7A;
      if (c >= '0' && c <= '9') e = 0xF0 + (c - '0');
      record[i] = ascii ? static_cast<uint8_t>(c) : e;
      bytes[i] = record[i];  // the main textual header in the same encoding
    }
    bytes.insert(bytes.begin() + 3600, record.begin(), record.end());
    Put16(&bytes, 3504, 0xffff);
    auto l = Parse(ascii ? "ascii.sgy" : "ebcdic.sgy", bytes);
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->extended_textual_headers, 1);
    EXPECT_EQ(l->first_trace_offset, 6800u);
    EXPECT_EQ(l->n_traces, 2u);
  }
}

TEST(SegyFileTest, FilesStartingWithATraceHeaderSayWhatTheyLookLike) {
  // PASSCAL single-trace file: 240-byte header, 3000 int16 samples (data form 0).
  std::vector<uint8_t> passcal(240 + 3000 * 2, 0);
  Put16(&passcal, 114, 3000);
  Put16(&passcal, 204, 0);
  for (size_t i = 240; i < passcal.size(); i += 2) Put16(&passcal, i, 1);  // looks like format 1
  auto p = Parse("station.sgy", passcal);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(Says(p.status(), "station.sgy")) << p.status();
  EXPECT_TRUE(Says(p.status(), "looks like a PASSCAL single-trace SEG-Y file")) << p.status();
  std::vector<uint8_t> short_passcal(240 + 100 * 4, 0);
  Put16(&short_passcal, 114, 100);
  Put16(&short_passcal, 204, 1);
  auto sp = Parse("short.sgy", short_passcal);
  ASSERT_FALSE(sp.ok());
  EXPECT_TRUE(Says(sp.status(), "shorter than the 3600-byte SEG-Y file header"));
  EXPECT_TRUE(Says(sp.status(), "100 int32 samples")) << sp.status();
  // A Seismic Unix file given a .sgy name: 240-byte headers, no file header.
  auto su = MakeSegyBytes(Spec(5, ByteOrder::kLittleEndian, 50, 20));
  su.erase(su.begin(), su.begin() + 3600);
  auto u = Parse("line.sgy", su);
  ASSERT_FALSE(u.ok());
  EXPECT_TRUE(Says(u.status(), "looks like a Seismic Unix file")) << u.status();
  EXPECT_TRUE(Says(u.status(), "20 traces"));
  EXPECT_TRUE(Says(u.status(), "name it .su"));
}

}  // namespace
}  // namespace shotstream::segy
