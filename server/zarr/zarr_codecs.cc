#include "server/zarr/zarr_codecs.h"

#include <blosc.h>
#include <isa-l/crc.h>
#include <lz4.h>
#include <zfp.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace shotstream::zarr {
namespace {

using json = nlohmann::json;

absl::StatusOr<json> Parse(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("not valid JSON");
  return j;
}

// v2 "<f4", "|u1", ">i2", "|b1".
absl::StatusOr<Scalar> V2Scalar(const std::string& s) {
  if (s.size() < 3) return absl::InvalidArgumentError(absl::StrCat("data type '", s, "'"));
  Scalar out;
  out.big_endian = s[0] == '>';
  int size = 0;
  if (!absl::SimpleAtoi(s.substr(2), &size) || (size != 1 && size != 2 && size != 4 && size != 8)) {
    return absl::InvalidArgumentError(absl::StrCat("data type '", s, "' (sizes 1, 2, 4, 8)"));
  }
  out.size = size;
  switch (s[1]) {
    case 'b': out.kind = ScalarKind::kBool; break;
    case 'i': out.kind = ScalarKind::kInt; break;
    case 'u': out.kind = ScalarKind::kUInt; break;
    case 'f':
      if (size < 4) return absl::InvalidArgumentError(absl::StrCat("data type '", s, "' (float16)"));
      out.kind = ScalarKind::kFloat;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("data type '", s, "' (booleans, integers and floats are served)"));
  }
  if (s[0] != '<' && s[0] != '>' && s[0] != '|') {
    return absl::InvalidArgumentError(absl::StrCat("data type '", s, "': byte order"));
  }
  return out;
}

// v3 "float32", "int16", "bool", ...
absl::StatusOr<Scalar> V3Scalar(const std::string& s) {
  static const struct {
    const char* name;
    ScalarKind kind;
    int size;
  } kTypes[] = {{"bool", ScalarKind::kBool, 1},    {"int8", ScalarKind::kInt, 1},
                {"int16", ScalarKind::kInt, 2},    {"int32", ScalarKind::kInt, 4},
                {"int64", ScalarKind::kInt, 8},    {"uint8", ScalarKind::kUInt, 1},
                {"uint16", ScalarKind::kUInt, 2},  {"uint32", ScalarKind::kUInt, 4},
                {"uint64", ScalarKind::kUInt, 8},  {"float32", ScalarKind::kFloat, 4},
                {"float64", ScalarKind::kFloat, 8}};
  for (const auto& t : kTypes) {
    if (s == t.name) return Scalar{t.kind, t.size, false};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "data type '", s, "' (served: bool, int8-64, uint8-64, float32, float64)"));
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

void SwapBytes(uint8_t* p, int size) { std::reverse(p, p + size); }

absl::StatusOr<ChunkBytes> Inflate(const ChunkBytes& in, bool gzip,
                                             size_t expect) {
  z_stream z{};
  if (inflateInit2(&z, gzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK) {
    return absl::InternalError("zlib: inflateInit2 failed");
  }
  ChunkBytes out(std::max<size_t>(expect, 64));
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  size_t have = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (have == out.size()) out.resize(out.size() * 2);
    z.next_out = out.data() + have;
    z.avail_out = static_cast<uInt>(out.size() - have);
    rc = inflate(&z, Z_NO_FLUSH);
    have = out.size() - z.avail_out;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return absl::DataLossError(absl::StrCat(gzip ? "gzip" : "zlib", ": the chunk does not "
                                            "inflate (", z.msg ? z.msg : "truncated", ")"));
  }
  out.resize(have);
  return out;
}

absl::StatusOr<ChunkBytes> Unzstd(const ChunkBytes& in, size_t expect) {
  const unsigned long long size = ZSTD_getFrameContentSize(in.data(), in.size());
  if (size == ZSTD_CONTENTSIZE_ERROR) return absl::DataLossError("zstd: not a zstd frame");
  if (size != ZSTD_CONTENTSIZE_UNKNOWN) {
    ChunkBytes out(size);
    const size_t rc = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(rc) || rc != size) {
      return absl::DataLossError(absl::StrCat("zstd: ", ZSTD_getErrorName(rc)));
    }
    return out;
  }
  // A streamed frame without its size.
  ChunkBytes out(std::max<size_t>(expect, 64));
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  size_t have = 0, rc = 1;
  while (rc != 0) {
    if (have == out.size()) out.resize(out.size() * 2);
    ZSTD_outBuffer dst{out.data() + have, out.size() - have, 0};
    rc = ZSTD_decompressStream(ctx, &dst, &src);
    have += dst.pos;
    if (ZSTD_isError(rc)) break;
    if (src.pos == src.size && dst.pos == 0 && rc != 0) break;
  }
  ZSTD_freeDCtx(ctx);
  if (rc != 0) return absl::DataLossError("zstd: the chunk does not decompress");
  out.resize(have);
  return out;
}

absl::StatusOr<ChunkBytes> Unblosc(const ChunkBytes& in) {
  size_t nbytes = 0, cbytes = 0, blocksize = 0;
  if (in.size() < BLOSC_MIN_HEADER_LENGTH) return absl::DataLossError("blosc: truncated chunk");
  blosc_cbuffer_sizes(in.data(), &nbytes, &cbytes, &blocksize);
  if (cbytes > in.size()) {
    return absl::DataLossError(absl::StrCat("blosc: the header says ", cbytes,
                                            " compressed bytes, the chunk has ", in.size()));
  }
  ChunkBytes out(nbytes);
  const int rc = blosc_decompress_ctx(in.data(), out.data(), out.size(), 1);
  if (rc < 0 || static_cast<size_t>(rc) != nbytes) {
    return absl::DataLossError(absl::StrCat("blosc: decompression failed (", rc, ")"));
  }
  return out;
}

// numcodecs' LZ4: a little-endian uint32 of the decoded size, then one LZ4 block.
absl::StatusOr<ChunkBytes> Unlz4(const ChunkBytes& in) {
  if (in.size() < 4) return absl::DataLossError("lz4: truncated chunk");
  const uint32_t size = Load<uint32_t>(in.data());
  ChunkBytes out(size);
  const int rc = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data() + 4),
                                     reinterpret_cast<char*>(out.data()),
                                     static_cast<int>(in.size() - 4), static_cast<int>(size));
  if (rc < 0 || static_cast<uint32_t>(rc) != size) {
    return absl::DataLossError("lz4: the chunk does not decompress");
  }
  return out;
}

// numcodecs' ZFPY: a zfp stream with its full header (type, dimensions, mode).
absl::StatusOr<ChunkBytes> Unzfp(ChunkBytes& in,
                                           absl::Span<const uint64_t> shape,
                                           const DataType& type) {
  bitstream* bits = stream_open(in.data(), in.size());
  zfp_stream* zfp = zfp_stream_open(bits);
  zfp_field* field = zfp_field_alloc();
  ChunkBytes out;
  absl::Status status = absl::OkStatus();
  if (zfp_read_header(zfp, field, ZFP_HEADER_FULL) == 0) {
    status = absl::DataLossError("zfpy: no zfp header");
  } else {
    const size_t n = zfp_field_size(field, nullptr);
    size_t want = 1;
    for (uint64_t d : shape) want *= d;
    const zfp_type zt = field->type;
    const int size = zt == zfp_type_float || zt == zfp_type_int32 ? 4 : 8;
    if (n != want || static_cast<size_t>(size) != type.size) {
      status = absl::DataLossError(absl::StrCat("zfpy: the stream holds ", n, " values of ", size,
                                                " bytes, the chunk ", want, " of ", type.size));
    } else {
      out.resize(n * size);
      zfp_field_set_pointer(field, out.data());
      if (zfp_decompress(zfp, field) == 0) status = absl::DataLossError("zfpy: decompression failed");
    }
  }
  zfp_field_free(field);
  zfp_stream_close(zfp);
  stream_close(bits);
  if (!status.ok()) return status;
  return out;
}

// Decoded = Encoded with its axes put back: encoded axis i is decoded axis order[i].
ChunkBytes Untranspose(const ChunkBytes& in, absl::Span<const int> order,
                                 absl::Span<const uint64_t> shape, size_t elem) {
  const size_t rank = shape.size();
  std::vector<uint64_t> dstride(rank, 1);
  for (size_t i = rank - 1; i > 0; --i) dstride[i - 1] = dstride[i] * shape[i];
  std::vector<uint64_t> eshape(rank), estride(rank);  // per encoded axis: its decoded stride
  for (size_t i = 0; i < rank; ++i) {
    eshape[i] = shape[order[i]];
    estride[i] = dstride[order[i]];
  }
  ChunkBytes out(in.size());
  std::vector<uint64_t> idx(rank, 0);
  uint64_t d = 0;
  const size_t n = in.size() / elem;
  for (size_t k = 0; k < n; ++k) {
    std::memcpy(out.data() + d * elem, in.data() + k * elem, elem);
    for (size_t a = rank; a-- > 0;) {  // next encoded index, C order
      d += estride[a];
      if (++idx[a] < eshape[a]) break;
      d -= estride[a] * eshape[a];
      idx[a] = 0;
    }
  }
  return out;
}

std::string Get(const json& j, const char* key, const std::string& dflt) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : dflt;
}

absl::StatusOr<Codec> BloscCodec(const json& c) {
  Codec out;
  out.name = "blosc";
  const std::string cname = Get(c, "cname", "lz4");
  std::string shuffle = "shuffle";
  if (c.contains("shuffle")) {
    if (c["shuffle"].is_string()) shuffle = c["shuffle"].get<std::string>();
    if (c["shuffle"].is_number()) {
      const int s = c["shuffle"].get<int>();
      shuffle = s == 0 ? "noshuffle" : s == 2 ? "bitshuffle" : "shuffle";
    }
  }
  out.label = absl::StrCat("blosc(", cname, ", ", shuffle, ")");
  return out;
}

}  // namespace

uint32_t Crc32c(const uint8_t* data, size_t size) {
  return crc32_iscsi(const_cast<uint8_t*>(data), static_cast<int>(size), 0xFFFFFFFFu) ^
         0xFFFFFFFFu;
}

absl::StatusOr<DataType> ParseDataType(const std::string& text, int zarr_format) {
  SS_ASSIGN_OR_RETURN(const json j, Parse(text));
  DataType t;
  t.name = j.is_string() ? j.get<std::string>() : j.dump();
  if (j.is_string()) {
    SS_ASSIGN_OR_RETURN(t.scalar, zarr_format == 2 ? V2Scalar(j.get<std::string>())
                                                    : V3Scalar(j.get<std::string>()));
    t.size = t.scalar.size;
    return t;
  }
  // Records: v2 [["name", "<i4"], ...]; v3 {"name": "structured", "configuration":
  // {"fields": [["name", "int32"], ...]}} (zarr-python) or "struct" with {"name",
  // "data_type"} objects.
  json fields;
  if (j.is_array() && zarr_format == 2) {
    fields = j;
  } else if (j.is_object() && j.contains("configuration") && j["configuration"].is_object() &&
             j["configuration"].contains("fields")) {
    fields = j["configuration"]["fields"];
  } else {
    return absl::InvalidArgumentError(absl::StrCat("data type ", j.dump(), " is not served"));
  }
  if (!fields.is_array() || fields.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("data type ", j.dump(), ": no fields"));
  }
  size_t offset = 0;
  for (const json& f : fields) {
    std::string name, type;
    if (f.is_array() && f.size() == 2 && f[0].is_string() && f[1].is_string()) {
      name = f[0].get<std::string>();
      type = f[1].get<std::string>();
    } else if (f.is_object() && f.contains("name") && f.contains("data_type") &&
               f["data_type"].is_string()) {
      name = f["name"].get<std::string>();
      type = f["data_type"].get<std::string>();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("record field ", f.dump(), " (fields of one scalar each are served)"));
    }
    SS_ASSIGN_OR_RETURN(Scalar s, zarr_format == 2 ? V2Scalar(type) : V3Scalar(type));
    t.fields.push_back({name, s, offset});
    offset += s.size;
  }
  t.size = offset;
  return t;
}

absl::StatusOr<std::vector<uint8_t>> ParseFillValue(const std::string& text, const DataType& t,
                                                    int zarr_format) {
  SS_ASSIGN_OR_RETURN(const json j, Parse(text));
  std::vector<uint8_t> out(t.size, 0);
  if (j.is_null()) return out;
  if (!t.fields.empty()) {
    if (j.is_string()) {  // base64 of the record's bytes
      std::string raw;
      if (absl::Base64Unescape(j.get<std::string>(), &raw) && raw.size() == t.size) {
        std::memcpy(out.data(), raw.data(), raw.size());
      }
    }
    return out;  // anything else: zeros (records are never samples)
  }
  const Scalar& s = t.scalar;
  double v = 0;
  uint64_t bits = 0;
  bool have_bits = false;
  if (j.is_boolean()) {
    v = j.get<bool>() ? 1 : 0;
  } else if (j.is_number_integer() && s.kind != ScalarKind::kFloat) {
    const int64_t i = j.is_number_unsigned() ? static_cast<int64_t>(j.get<uint64_t>())
                                             : j.get<int64_t>();
    std::memcpy(out.data(), &i, s.size);  // little-endian host: the low bytes
    return out;
  } else if (j.is_number()) {
    v = j.get<double>();
  } else if (j.is_string()) {
    const std::string str = j.get<std::string>();
    if (str == "NaN") {
      v = std::numeric_limits<double>::quiet_NaN();
    } else if (str == "Infinity") {
      v = std::numeric_limits<double>::infinity();
    } else if (str == "-Infinity") {
      v = -std::numeric_limits<double>::infinity();
    } else if (absl::StartsWith(str, "0x") && absl::SimpleHexAtoi(str.substr(2), &bits)) {
      have_bits = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("fill_value ", j.dump()));
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat("fill_value ", j.dump()));
  }
  (void)zarr_format;
  if (have_bits) {
    std::memcpy(out.data(), &bits, s.size);
    return out;
  }
  switch (s.kind) {
    case ScalarKind::kFloat:
      if (s.size == 4) {
        const float f = static_cast<float>(v);
        std::memcpy(out.data(), &f, 4);
      } else {
        std::memcpy(out.data(), &v, 8);
      }
      break;
    case ScalarKind::kBool:
      out[0] = v != 0;
      break;
    default: {
      const int64_t i = static_cast<int64_t>(v);
      std::memcpy(out.data(), &i, s.size);
    }
  }
  return out;
}

absl::StatusOr<Codec> ParseV3Codec(const std::string& text) {
  SS_ASSIGN_OR_RETURN(const json j, Parse(text));
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat("codec ", j.dump(), ": no name"));
  }
  const std::string name = j["name"].get<std::string>();
  const json c = j.contains("configuration") ? j["configuration"] : json::object();
  Codec out;
  out.name = name;
  out.label = name;
  if (name == "bytes") {
    out.big_endian = Get(c, "endian", "little") == "big";
    if (out.big_endian) out.label = "bytes(big)";
  } else if (name == "transpose") {
    if (!c.contains("order") || !c["order"].is_array()) {
      return absl::InvalidArgumentError("transpose: no order (an array of axes)");
    }
    for (const json& a : c["order"]) out.order.push_back(a.get<int>());
  } else if (name == "blosc") {
    return BloscCodec(c);
  } else if (name == "numcodecs.zfpy" || name == "zfpy") {
    out.name = "zfpy";
  } else if (name == "numcodecs.zstd") {
    out.name = "zstd";
  } else if (name == "numcodecs.gzip") {
    out.name = "gzip";
  } else if (name == "numcodecs.zlib") {
    out.name = "zlib";
  } else if (name == "numcodecs.lz4") {
    out.name = "lz4";
  } else if (name == "numcodecs.blosc") {
    return BloscCodec(c);
  } else if (name != "zstd" && name != "gzip" && name != "crc32c") {
    return absl::InvalidArgumentError(absl::StrCat(
        "codec '", name, "' is not served (bytes, transpose, blosc, zstd, gzip, crc32c, "
        "sharding_indexed, numcodecs.zfpy are)"));
  }
  return out;
}

absl::StatusOr<Codec> ParseV2Compressor(const std::string& text) {
  SS_ASSIGN_OR_RETURN(const json j, Parse(text));
  if (!j.is_object() || !j.contains("id") || !j["id"].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat("compressor ", j.dump(), ": no id"));
  }
  const std::string id = j["id"].get<std::string>();
  Codec out;
  out.name = id;
  out.label = id;
  if (id == "blosc") return BloscCodec(j);
  if (id == "zfpy") return out;
  if (id != "zstd" && id != "gzip" && id != "zlib" && id != "lz4") {
    return absl::InvalidArgumentError(absl::StrCat(
        "compressor '", id, "' is not served (blosc, zstd, gzip, zlib, lz4, zfpy are)"));
  }
  return out;
}

absl::StatusOr<ChunkBytes> DecodeChunk(ChunkBytes data,
                                                 absl::Span<const Codec> codecs,
                                                 absl::Span<const uint64_t> shape,
                                                 const DataType& type) {
  size_t n = 1;
  for (uint64_t d : shape) n *= d;
  const size_t want = n * type.size;
  // The array-to-bytes codec splits the chain: bytes-to-bytes after it, array-to-array
  // before it; each half runs backwards.
  size_t a2b = 0;
  while (a2b < codecs.size() && codecs[a2b].name == "transpose") ++a2b;
  for (size_t i = codecs.size(); i-- > a2b + 1;) {
    const Codec& c = codecs[i];
    if (c.name == "crc32c") {
      if (data.size() < 4) return absl::DataLossError("crc32c: chunk shorter than its checksum");
      const uint32_t stored = Load<uint32_t>(data.data() + data.size() - 4);
      const uint32_t found = Crc32c(data.data(), data.size() - 4);
      if (stored != found) {
        return absl::DataLossError(absl::StrCat("crc32c: the chunk's checksum is ", stored,
                                                " but its bytes give ", found));
      }
      data.resize(data.size() - 4);
    } else if (c.name == "blosc") {
      SS_ASSIGN_OR_RETURN(data, Unblosc(data));
    } else if (c.name == "zstd") {
      SS_ASSIGN_OR_RETURN(data, Unzstd(data, want));
    } else if (c.name == "gzip" || c.name == "zlib") {
      SS_ASSIGN_OR_RETURN(data, Inflate(data, c.name == "gzip", want));
    } else if (c.name == "lz4") {
      SS_ASSIGN_OR_RETURN(data, Unlz4(data));
    } else {
      return absl::InternalError(absl::StrCat("codec '", c.name, "' in the bytes-to-bytes part"));
    }
  }
  // The chunk's shape as the array-to-bytes codec saw it (after the transposes).
  std::vector<uint64_t> encoded(shape.begin(), shape.end());
  for (size_t i = 0; i < a2b; ++i) {
    std::vector<uint64_t> next(encoded.size());
    for (size_t k = 0; k < encoded.size(); ++k) next[k] = encoded[codecs[i].order[k]];
    encoded = next;
  }
  if (a2b < codecs.size() && codecs[a2b].name == "zfpy") {
    SS_ASSIGN_OR_RETURN(data, Unzfp(data, encoded, type));
  } else {
    if (data.size() != want) {
      return absl::DataLossError(absl::StrCat("the chunk decodes to ", data.size(),
                                              " bytes where ", n, " elements of ", type.size,
                                              " bytes (", want, ") were expected"));
    }
    const bool big = a2b < codecs.size() && codecs[a2b].big_endian;
    if (type.fields.empty()) {
      if ((big || type.scalar.big_endian) && type.size > 1) {
        for (size_t k = 0; k < n; ++k) SwapBytes(data.data() + k * type.size, type.size);
      }
    } else {
      for (const DataType::Field& f : type.fields) {
        if ((big || f.type.big_endian) && f.type.size > 1) {
          for (size_t k = 0; k < n; ++k) {
            SwapBytes(data.data() + k * type.size + f.offset, f.type.size);
          }
        }
      }
    }
  }
  for (size_t i = a2b; i-- > 0;) {
    // Undo transpose i: its input had the shape before it.
    std::vector<uint64_t> before(shape.begin(), shape.end());
    for (size_t p = 0; p < i; ++p) {
      std::vector<uint64_t> next(before.size());
      for (size_t k = 0; k < before.size(); ++k) next[k] = before[codecs[p].order[k]];
      before = next;
    }
    data = Untranspose(data, codecs[i].order, before, type.size);
  }
  return data;
}

double ScalarValue(const uint8_t* p, const Scalar& s) {
  switch (s.kind) {
    case ScalarKind::kBool:
      return *p != 0;
    case ScalarKind::kFloat:
      return s.size == 4 ? Load<float>(p) : Load<double>(p);
    case ScalarKind::kInt:
      switch (s.size) {
        case 1: return Load<int8_t>(p);
        case 2: return Load<int16_t>(p);
        case 4: return Load<int32_t>(p);
        default: return static_cast<double>(Load<int64_t>(p));
      }
    case ScalarKind::kUInt:
      switch (s.size) {
        case 1: return Load<uint8_t>(p);
        case 2: return Load<uint16_t>(p);
        case 4: return Load<uint32_t>(p);
        default: return static_cast<double>(Load<uint64_t>(p));
      }
  }
  return 0;
}

namespace {
template <typename T>
void Convert(const uint8_t* src, size_t n, float* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(Load<T>(src + i * sizeof(T)));
}
}  // namespace

void ToFloat32(const uint8_t* src, const Scalar& s, size_t n, float* dst) {
  switch (s.kind) {
    case ScalarKind::kFloat:
      if (s.size == 4) {
        std::memcpy(dst, src, n * 4);
      } else {
        Convert<double>(src, n, dst);
      }
      return;
    case ScalarKind::kBool:
      for (size_t i = 0; i < n; ++i) dst[i] = src[i] != 0;
      return;
    case ScalarKind::kInt:
      switch (s.size) {
        case 1: return Convert<int8_t>(src, n, dst);
        case 2: return Convert<int16_t>(src, n, dst);
        case 4: return Convert<int32_t>(src, n, dst);
        default: return Convert<int64_t>(src, n, dst);
      }
    case ScalarKind::kUInt:
      switch (s.size) {
        case 1: return Convert<uint8_t>(src, n, dst);
        case 2: return Convert<uint16_t>(src, n, dst);
        case 4: return Convert<uint32_t>(src, n, dst);
        default: return Convert<uint64_t>(src, n, dst);
      }
  }
}

}  // namespace shotstream::zarr
