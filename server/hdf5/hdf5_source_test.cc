// The HDF5 source on its own: files written here with libhdf5's C API, opened through the
// Format, read, and rewritten in place while an older open of them lives.
#include "server/hdf5/hdf5_source.h"

#include <hdf5.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shotstream::hdf5 {
namespace {

std::string Dir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

// A dataset stored as `type` from `data` in memory as `mem_type` (default: `type`).
void Write(hid_t where, const char* name, hid_t type, const std::vector<hsize_t>& dims,
           const void* data, hid_t mem_type = -1) {
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t d = H5Dcreate2(where, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, mem_type >= 0 ? mem_type : type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  H5Dclose(d);
  H5Sclose(space);
}

// /data float32 [shots, traces, samples], value = base + flat index; /shot_ids when given.
std::string Write3d(const std::string& name, hsize_t shots, hsize_t traces, hsize_t samples,
                    float base, const std::vector<int64_t>& ids = {}) {
  const std::string path = Dir() + "/" + name;
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<float> v(shots * traces * samples);
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i);
  Write(f, "/data", H5T_NATIVE_FLOAT, {shots, traces, samples}, v.data());
  if (!ids.empty()) Write(f, "/shot_ids", H5T_NATIVE_INT64, {ids.size()}, ids.data());
  H5Fclose(f);
  return path;
}

// /data int16 [traces, samples] with headers/field_record and headers/offset.
std::string Write2d(const std::string& name, const std::vector<double>& ffid) {
  const std::string path = Dir() + "/" + name;
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t n = ffid.size(), ns = 3;
  std::vector<int16_t> v(n * ns);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int16_t>(i);
  Write(f, "/data", H5T_STD_I16BE, {n, ns}, v.data(), H5T_NATIVE_SHORT);
  const hid_t g = H5Gcreate2(f, "/headers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  Write(g, "field_record", H5T_NATIVE_DOUBLE, {n}, ffid.data());
  std::vector<double> offset(n);
  for (size_t i = 0; i < n; ++i) offset[i] = 12.5 * i;
  Write(g, "offset", H5T_NATIVE_DOUBLE, {n}, offset.data());
  H5Gclose(g);
  H5Fclose(f);
  return path;
}

absl::StatusOr<std::unique_ptr<source::Source>> Open(std::vector<std::string> paths) {
  source::SourceSpec spec;
  spec.dataset = "h5";
  spec.paths = std::move(paths);
  spec.sample_interval_us = 1000;
  return Hdf5Format().open(spec);
}

// Shot `id`'s samples as float32.
std::vector<float> ReadShot(const source::Source& s, int64_t id,
                            absl::Status* status = nullptr) {
  const auto traces = s.catalog().TracesOf(*s.catalog().Find(id));
  const uint32_t ns = s.info().n_samples;
  std::vector<float> out(traces.size() * ns);
  std::vector<uint8_t*> dst(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) dst[i] = reinterpret_cast<uint8_t*>(out.data() + i * ns);
  source::TraceRead read;
  read.shot_id = id;
  read.traces = traces;
  read.range = {0, ns};
  read.dst = dst.data();
  auto r = s.Read(read);
  if (status != nullptr) *status = r.status();
  return r.ok() ? out : std::vector<float>{};
}

TEST(Hdf5SourceTest, ThreeDimensionalShotsByIdsAndByPosition) {
  auto s = Open({Write3d("ids.h5", 2, 3, 4, 0, {20, 10})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->info().format, "hdf5");
  EXPECT_EQ((*s)->info().read_by, "libhdf5");
  EXPECT_FALSE((*s)->FormOf((*s)->catalog().AllTraces()).has_value());  // converted by libhdf5
  ASSERT_EQ((*s)->catalog().shots().size(), 2u);
  EXPECT_EQ((*s)->catalog().shots()[0].shot_id, 10);  // sorted by id: the file's second shot
  const std::vector<float> ten = ReadShot(**s, 10);
  ASSERT_EQ(ten.size(), 12u);
  EXPECT_EQ(ten[0], 12);
  EXPECT_EQ(ten[11], 23);
  auto by_position = Open({Write3d("p1.h5", 2, 3, 4, 0), Write3d("p2.h5", 1, 3, 4, 100)});
  ASSERT_TRUE(by_position.ok()) << by_position.status();
  EXPECT_EQ((*by_position)->catalog().shots().size(), 3u);
  EXPECT_EQ(ReadShot(**by_position, 3)[0], 100);
  EXPECT_EQ((*by_position)->catalog().Find(3)->n_traces, 3u);
}

TEST(Hdf5SourceTest, TwoDimensionalTracesGroupedByTheirColumnWithColumnHeaders) {
  auto s = Open({Write2d("cols.h5", {7, 7, 3, 7, 3})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->info().header_fields,
            (std::vector<std::string>{"field_record", "offset", "trace_number"}));
  ASSERT_EQ((*s)->catalog().shots().size(), 2u);
  const auto seven = (*s)->catalog().TracesOf(*(*s)->catalog().Find(7));
  ASSERT_EQ(seven.size(), 3u);
  EXPECT_EQ(seven[2].offset, 3u);  // file order
  source::TraceRead read;
  read.shot_id = 7;
  read.traces = seven;
  read.range = {1, 2};
  std::vector<float> out(6);
  std::vector<uint8_t*> dst = {reinterpret_cast<uint8_t*>(out.data()),
                               reinterpret_cast<uint8_t*>(out.data() + 2),
                               reinterpret_cast<uint8_t*>(out.data() + 4)};
  read.dst = dst.data();
  auto r = (*s)->Read(read);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(out, (std::vector<float>{1, 2, 4, 5, 10, 11}));
  segy::HeaderSelector offset, trace_number;
  offset.name = "offset";
  trace_number.name = "trace_number";
  EXPECT_EQ(r->headers->Value(2, offset), 37.5);
  EXPECT_EQ(r->headers->Value(2, trace_number), 3);
  uint8_t h[240];
  r->headers->BigEndianHeader(1, h);
  EXPECT_EQ(segy::ReadHeaderInt(h, 37, 4, segy::ByteOrder::kBigEndian), 12);  // round(12.5)
  EXPECT_EQ(segy::ReadHeaderInt(h, 9, 4, segy::ByteOrder::kBigEndian), 7);
}

// libhdf5 shares an open file's cached state with every later open of the same inode, so
// a file rewritten in place was read through the old state after its catalog was rebuilt.
TEST(Hdf5SourceTest, AFileRewrittenInPlaceIsReadFreshByANewOpenWhileTheOldOneLives) {
  const std::string path = Write3d("rewrite.h5", 2, 3, 4, 0);
  auto old = Open({path});
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(ReadShot(**old, 2)[0], 12);
  // Another writer's rewrite in place: new contents into the same inode (libhdf5 itself
  // will not truncate a file it has open, so they are made elsewhere and copied over).
  const std::string other = Write3d("rewrite-new.h5", 3, 3, 4, 1000);
  {
    std::ifstream in(other, std::ios::binary);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
  }
  EXPECT_EQ((*old)->CheckUnchanged(0).code(), absl::StatusCode::kDataLoss);
  auto fresh = Open({path});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ((*fresh)->catalog().shots().size(), 3u);
  EXPECT_EQ(ReadShot(**fresh, 2)[0], 1012);
  EXPECT_EQ(ReadShot(**fresh, 3)[11], 1035);
  absl::Status stale;
  ReadShot(**old, 1, &stale);
  EXPECT_EQ(stale.code(), absl::StatusCode::kDataLoss) << stale;
  old->reset();  // the retired handle goes without disturbing the fresh one
  EXPECT_EQ(ReadShot(**fresh, 1)[0], 1000);
}

TEST(Hdf5SourceTest, KeysAreColumnNamesAndMissingColumnsAreNamed) {
  EXPECT_TRUE(Hdf5Format().check_shot_key("cdp").ok());
  EXPECT_FALSE(Hdf5Format().check_shot_key("byte:9").ok());
  EXPECT_FALSE(Hdf5Format().check_shot_key("source_xy").ok());
  source::SourceSpec spec;
  spec.paths = {Write2d("key.h5", {1, 2})};
  spec.shot_key = "cdp";
  auto s = Hdf5Format().open(spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("needs a header column headers/cdp"), absl::string_view::npos)
      << s.status();
  EXPECT_TRUE(Hdf5Format().claims("/x/a.hdf5", {}));
}

}  // namespace
}  // namespace shotstream::hdf5
