// Header values held as columns: by name, the fields made where no column gives them, and
// the 240-byte header made from them.
#include "server/source/column_headers.h"

#include "common/crc32.h"
#include "gtest/gtest.h"

namespace shotstream::source {
namespace {

segy::HeaderSelector Named(const std::string& name) {
  auto standard = segy::ResolveHeader(name);
  if (standard.ok()) return *standard;
  segy::HeaderSelector h;
  h.name = name;
  return h;
}

TEST(ColumnHeaders, ValuesByNameAndTheMadeFields) {
  const HeaderColumns columns = {{"offset", {100.5, 200.5}}, {"shot_no", {1001, 1001}}};
  std::vector<std::string> fields;
  AddColumnFields(columns, &fields);
  EXPECT_EQ(fields, (std::vector<std::string>{"offset", "shot_no", "field_record",
                                              "trace_number"}));
  EXPECT_EQ(ColumnValue(columns, 1, Named("offset"), 7, 0), 200.5);
  EXPECT_EQ(ColumnValue(columns, 1, Named("shot_no"), 7, 0), 1001);
  EXPECT_EQ(ColumnValue(columns, 1, Named("field_record"), 7, 4), 7);  // the shot id
  EXPECT_EQ(ColumnValue(columns, 1, Named("trace_number"), 7, 4), 5);  // 1-based
  EXPECT_EQ(ColumnValue(columns, 1, Named("cdp"), 7, 4), 0);
  // A column of a made field's name wins.
  const HeaderColumns own = {{"field_record", {55, 56}}};
  fields.clear();
  AddColumnFields(own, &fields);
  EXPECT_EQ(fields, (std::vector<std::string>{"field_record", "trace_number"}));
  EXPECT_EQ(ColumnValue(own, 1, Named("field_record"), 7, 0), 56);
}

TEST(ColumnHeaders, TheMadeHeaderHoldsTheColumnsAtTheirSegyPlaces) {
  const HeaderColumns columns = {{"offset", {-250.4, 99}}, {"receiver", {3, 4}},
                                 {"trace_number", {40, 41}}};
  const std::vector<ColumnPlace> places = PlacesOf(columns);
  ASSERT_EQ(places.size(), 2u);  // offset and trace_number; "receiver" is no SEG-Y field
  SourceInfo info;
  info.n_samples = 1500;
  info.sample_interval_us = 2000;
  uint8_t h[segy::kTraceHeaderBytes];
  MakeColumnHeader(columns, places, 0, 12, 3, info, h);
  auto field = [&](int byte, int size) {
    return segy::ReadHeaderInt(h, byte, size, segy::ByteOrder::kBigEndian);
  };
  EXPECT_EQ(field(9, 4), 12);     // field_record: the shot id
  EXPECT_EQ(field(13, 4), 40);    // trace_number: the column wins over the position (4)
  EXPECT_EQ(field(37, 4), -250);  // offset, rounded as SEG-Y holds it
  EXPECT_EQ(field(115, 2), 1500);
  EXPECT_EQ(field(117, 2), 2000);
}

TEST(ColumnHeaders, TheMadeHeaderKeepsGeometryWithScalars) {
  // HDF5 headers/group_x, Zarr group_coord_x (served as group_x): placed at bytes 81-84
  // with the coordinate scalar that keeps them exact, elevations with theirs.
  const HeaderColumns columns = {{"group_x", {1012.5, 7}},
                                 {"source_y", {6712345.5, 2}},
                                 {"receiver_elevation", {12.25, 3}},
                                 {"offset", {3e13, 5}}};
  const std::vector<ColumnPlace> places = PlacesOf(columns);
  ASSERT_EQ(places.size(), 4u);
  SourceInfo info;
  info.n_samples = 10;
  info.sample_interval_us = 2000;
  uint8_t h[segy::kTraceHeaderBytes];
  MakeColumnHeader(columns, places, 0, 12, 0, info, h);
  for (const auto& [name, values] : columns) {
    auto sel = segy::ResolveHeader(name);
    ASSERT_TRUE(sel.ok());
    const double want = name == "offset" ? 0 : values[0];  // 3e13: no field holds it
    EXPECT_DOUBLE_EQ(segy::HeaderValue(*sel, h, segy::ByteOrder::kBigEndian), want) << name;
  }
  EXPECT_EQ(segy::ReadHeaderInt(h, 71, 2, segy::ByteOrder::kBigEndian), -10);
  EXPECT_EQ(segy::ReadHeaderInt(h, 69, 2, segy::ByteOrder::kBigEndian), -100);
  MakeColumnHeader(columns, places, 1, 12, 1, info, h);
  EXPECT_EQ(segy::ReadHeaderInt(h, 71, 2, segy::ByteOrder::kBigEndian), 1) << "its own";
  EXPECT_EQ(segy::ReadHeaderInt(h, 37, 4, segy::ByteOrder::kBigEndian), 5);
}

}  // namespace
}  // namespace shotstream::source

namespace shotstream::source {
namespace {

// The header values an array source returns for a read: from the file's columns (trace
// number by place among the read's traces, or, in a shot-shaped store, by row within the
// shot), or from its stored records where it has them; and each trace's CRC-32.
TEST(ColumnTraceHeadersTest, ColumnsOrRecordsByFile) {
  const HeaderColumns columns = {{"offset", {10, 20, 30, 40, 50, 60}}};
  const std::vector<ColumnPlace> places = PlacesOf(columns);
  std::vector<uint8_t> raw(2 * segy::kTraceHeaderBytes, 0);
  raw[segy::kTraceHeaderBytes + 39] = 77;  // record 1: offset (bytes 37-40) = 77
  SourceInfo info;
  info.n_samples = 2;
  std::vector<float> a = {1, 2}, b = {3, 4};
  std::vector<uint8_t*> dst = {reinterpret_cast<uint8_t*>(a.data()),
                               reinterpret_cast<uint8_t*>(b.data())};
  std::vector<io::TraceRef> traces(2);
  traces[0].file_id = 0;
  traces[0].offset = 4;  // row 4 of file 0: the second trace of a shot of 3
  traces[1].file_id = 1;
  traces[1].offset = 1;  // record 1 of file 1
  uint32_t crcs[2] = {0, 0};
  TraceRead read;
  read.shot_id = 9;
  read.traces = traces;
  read.dst = dst.data();
  read.range.count = 2;
  read.trace_crc = crcs;
  ColumnTraceHeaders headers(
      [&](uint32_t f) {
        FileColumns c;
        c.columns = &columns;
        c.places = &places;
        if (f == 0) c.traces_per_shot = 3;
        if (f == 1) c.raw = &raw;
        return c;
      },
      &info, read);
  EXPECT_EQ(headers.Value(0, Named("offset")), 50);
  EXPECT_EQ(headers.Value(0, Named("trace_number")), 2);  // row 4 mod 3, 1-based
  EXPECT_EQ(headers.Value(1, Named("offset")), 77);       // the record wins
  uint8_t h[segy::kTraceHeaderBytes];
  headers.BigEndianHeader(1, h);
  EXPECT_EQ(h[39], 77);
  TakeTraceCrcs(read);
  EXPECT_EQ(crcs[0], Crc32(0, a.data(), 8));
  EXPECT_EQ(crcs[1], Crc32(0, b.data(), 8));
}

}  // namespace
}  // namespace shotstream::source
