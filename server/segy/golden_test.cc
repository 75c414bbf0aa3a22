// Every public segyio test file reads to its golden values (../shared/testdata/segyio),
// or fails with a clear error where the golden file expects one. Fails, not skips, when
// the test files are missing.
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/io/coalescing_reader.h"
#include "server/segy/segy_file.h"
#include "segy/trace_header.h"
#include "testdata_dir.h"

namespace shotstream::segy {
namespace {

using nlohmann::json;

const std::map<std::string, int> kFieldBytes = {
    {"FieldRecord", 9}, {"INLINE_3D", 189}, {"CROSSLINE_3D", 193},
    {"offset", 37},     {"SourceX", 73},    {"GroupX", 81}};

class GoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = SEGYIO_TESTDATA_DIR;
    ASSERT_FALSE(dir_.empty()) << "../shared/testdata/segyio is not present: the golden "
                                  "test files are part of the build's inputs";
    std::ifstream in(dir_ + "/golden.json");
    ASSERT_TRUE(in.good());
    golden_ = json::parse(in);
  }
  std::string dir_;
  json golden_;
};

// Relative tolerance of a float32 result against a float64 golden sum: values of more
// than 24 significant bits (32/64-bit integers) are rounded once to float32.
double Tolerance(int format) {
  switch (format) {
    case 2: case 9: case 10: case 12: return 1e-7;
    default: return 1e-9;
  }
}

TEST_F(GoldenTest, EveryFileReadsToItsGoldenValuesOrFailsClearly) {
  int checked = 0, refused = 0;
  for (const json& g : golden_) {
    const std::string name = g["file"];
    SCOPED_TRACE(name);
    const std::string path = dir_ + "/" + name;
    auto file = OpenSegyFile(path);
    const bool expect_error = g["expect_error"].is_boolean() && g["expect_error"].get<bool>();
    if (expect_error) {
      ASSERT_FALSE(file.ok()) << "expected an error";
      EXPECT_NE(file.status().message().find(path), std::string::npos) << file.status();
      ++refused;
      continue;
    }
    ASSERT_TRUE(file.ok()) << file.status();
    // The SEG-Y fields of the layout (extended headers, headers per trace), from the
    // parser itself over the whole file.
    std::vector<uint8_t> bytes((*file)->size());
    ASSERT_TRUE((*file)->ReadAt(0, bytes.size(), bytes.data()).ok());
    auto parsed = ParseSegyHeaders(path, bytes.data(), bytes.size(), bytes.size(), {});
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const SegyLayout& l = *parsed;
    EXPECT_EQ(static_cast<int>(l.format), g["format"].get<int>());
    EXPECT_EQ(l.byte_order == ByteOrder::kBigEndian ? "big" : "little",
              g["endian"].get<std::string>());
    ASSERT_EQ(l.n_traces, g["traces"].get<uint64_t>());
    EXPECT_EQ(l.n_samples, g["samples"].get<uint32_t>());
    EXPECT_EQ(l.sample_interval_us, g["dt_us"].get<double>());
    EXPECT_EQ(l.extended_textual_headers, g["ext_headers"].get<int>());
    if (g.contains("first_trace_offset") && g["first_trace_offset"].is_number()) {
      EXPECT_EQ(l.first_trace_offset, g["first_trace_offset"].get<uint64_t>());
    }
    if (g.contains("trace_headers_per_trace") && g["trace_headers_per_trace"].is_number()) {
      EXPECT_EQ(l.trace_headers_per_trace, g["trace_headers_per_trace"].get<int>());
    }
    // Every trace through the coalescing reader, as the server reads them.
    std::vector<io::TraceRef> refs;
    for (uint64_t t = 0; t < l.n_traces; ++t) refs.push_back({0, l.TraceOffset(t)});
    std::vector<float> samples(l.n_traces * l.n_samples);
    std::vector<float*> dst;
    for (uint64_t t = 0; t < l.n_traces; ++t) dst.push_back(samples.data() + t * l.n_samples);
    std::vector<uint8_t> headers(l.n_traces * kTraceHeaderBytes);
    const io::TraceFile* files[] = {file->get()};
    ASSERT_TRUE(io::ReadTraces(files, refs, {}, dst.data(), headers.data()).ok());

    long double sum = 0;
    for (float v : samples) sum += v;
    const double want = g["sum"].get<double>();
    EXPECT_NEAR(static_cast<double>(sum), want,
                std::max(1e-6, std::fabs(want) * Tolerance(static_cast<int>(l.format))));
    const auto& first = g["first_samples"];
    for (size_t i = 0; i < first.size(); ++i) {
      EXPECT_NEAR(samples[i], first[i].get<double>(),
                  std::fabs(first[i].get<double>()) * Tolerance(static_cast<int>(l.format)));
    }
    if (g.contains("trace0_first_nonzero") && g["trace0_first_nonzero"].is_object()) {
      const auto& nz = g["trace0_first_nonzero"];
      size_t i = 0;
      while (i < l.n_samples && samples[i] == 0.0f) ++i;
      EXPECT_EQ(i, nz["index"].get<size_t>());
      if (i < l.n_samples) {
        EXPECT_NEAR(samples[i], nz["value"].get<double>(),
                    std::fabs(nz["value"].get<double>()) * Tolerance(static_cast<int>(l.format)));
      }
    }
    for (const auto& [field, byte] : kFieldBytes) {
      const json& f = g["fields"][field];
      std::set<int64_t> distinct;
      for (uint64_t t = 0; t < l.n_traces; ++t) {
        distinct.insert(ReadHeaderInt(headers.data() + t * kTraceHeaderBytes, byte, 4,
                                      l.byte_order));
      }
      EXPECT_EQ(distinct.size(), f["distinct"].get<size_t>()) << field;
      if (!distinct.empty()) {
        EXPECT_EQ(*distinct.begin(), f["min"].get<int64_t>()) << field;
        EXPECT_EQ(*distinct.rbegin(), f["max"].get<int64_t>()) << field;
      }
    }
    ++checked;
  }
  // 90 files: 2 structurally invalid, the rest read (format 4 too).
  EXPECT_EQ(golden_.size(), 90u);
  EXPECT_EQ(checked + refused, static_cast<int>(golden_.size()));
  EXPECT_EQ(refused, 2);
}

}  // namespace
}  // namespace shotstream::segy
