#include "npy/npy_header.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace shotstream::npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;

absl::Status Bad(const std::string& path, uint64_t byte, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": byte ", byte, ": ", why));
}

// The text after `'key':` in a header dict, up to the next top-level ',' or '}', trimmed;
// empty when the key is absent.
absl::string_view DictValue(absl::string_view dict, absl::string_view key) {
  for (const char quote : {'\'', '"'}) {
    const std::string k = absl::StrCat(std::string(1, quote), key, std::string(1, quote));
    size_t at = dict.find(k);
    if (at == absl::string_view::npos) continue;
    at = dict.find(':', at + k.size());
    if (at == absl::string_view::npos) return {};
    size_t end = at + 1;
    int depth = 0;
    while (end < dict.size()) {
      const char c = dict[end];
      if (c == '(' || c == '[') ++depth;
      if (c == ')' || c == ']') --depth;
      if (depth == 0 && (c == ',' || c == '}')) break;
      if (depth < 0) break;
      ++end;
    }
    return absl::StripAsciiWhitespace(dict.substr(at + 1, end - at - 1));
  }
  return {};
}

// A dtype string such as '<f4' -> format, byte order and width; false if not served.
bool ParseDescr(absl::string_view d, NpyHeader* h) {
  if (d.size() != 3) return false;
  const char order = d[0], kind = d[1], width = d[2];
  if (order == '<' || order == '|' || order == '=') {
    h->byte_order = segy::ByteOrder::kLittleEndian;  // '=' is native: x86-64 and arm64 here
  } else if (order == '>') {
    h->byte_order = segy::ByteOrder::kBigEndian;
  } else {
    return false;
  }
  using F = segy::SampleFormat;
  struct Kind {
    char kind, width;
    F format;
  };
  static constexpr Kind kKinds[] = {
      {'f', '4', F::kIeeeFloat32}, {'f', '8', F::kIeeeFloat64}, {'i', '1', F::kInt8},
      {'i', '2', F::kInt16},       {'i', '4', F::kInt32},       {'i', '8', F::kInt64},
      {'u', '1', F::kUInt8},       {'u', '2', F::kUInt16},      {'u', '4', F::kUInt32},
      {'u', '8', F::kUInt64},
  };
  for (const Kind& k : kKinds) {
    if (k.kind == kind && k.width == width) {
      h->format = k.format;
      h->bytes_per_sample = width - '0';
      // Single bytes have no order; '|' is how numpy writes them.
      if (h->bytes_per_sample > 1 && order == '|') return false;
      return true;
    }
  }
  return false;
}

}  // namespace

bool IsNpy(const uint8_t* head, size_t head_size) {
  return head_size >= kMagicBytes && std::memcmp(head, kMagic, kMagicBytes) == 0;
}

absl::StatusOr<NpyHeader> ParseNpyHeader(const std::string& path, const uint8_t* head,
                                         size_t head_size, uint64_t file_size) {
  if (!IsNpy(head, head_size)) {
    return Bad(path, 0, "not a NumPy .npy file (no \\x93NUMPY magic string)");
  }
  if (head_size < 10) return Bad(path, head_size, "the file ends inside the .npy preamble");
  const int major = head[6];
  uint64_t header_len = 0;
  uint64_t dict_at = 0;
  if (major == 1) {
    header_len = head[8] | (uint64_t{head[9]} << 8);
    dict_at = 10;
  } else if (major == 2 || major == 3) {
    if (head_size < 12) return Bad(path, head_size, "the file ends inside the .npy preamble");
    header_len = head[8] | (uint64_t{head[9]} << 8) | (uint64_t{head[10]} << 16) |
                 (uint64_t{head[11]} << 24);
    dict_at = 12;
  } else {
    return Bad(path, 6, absl::StrCat(".npy format version ", major, ".", int{head[7]},
                                     " (1.0, 2.0 and 3.0 are read)"));
  }
  if (dict_at + header_len > kMaxHeaderBytes) {
    return Bad(path, 8, absl::StrCat("a .npy header of ", header_len, " bytes (at most ",
                                     kMaxHeaderBytes - dict_at, " are read)"));
  }
  if (dict_at + header_len > head_size) {
    return Bad(path, head_size, absl::StrCat("the file ends inside its .npy header of ",
                                             header_len, " bytes"));
  }
  const absl::string_view dict(reinterpret_cast<const char*>(head + dict_at), header_len);
  NpyHeader h;
  h.data_offset = dict_at + header_len;
  const absl::string_view descr = DictValue(dict, "descr");
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"') ||
      descr.back() != descr.front()) {
    return Bad(path, dict_at, absl::StrCat("the .npy header has no dtype ('descr'): ", dict));
  }
  h.descr = std::string(descr.substr(1, descr.size() - 2));
  if (!ParseDescr(h.descr, &h)) {
    return Bad(path, dict_at, absl::StrCat(
        "dtype '", h.descr, "' is not served (int8..int64, uint8..uint64, float32 or "
        "float64, either byte order; complex, structured and object arrays are not)"));
  }
  const absl::string_view fortran = DictValue(dict, "fortran_order");
  if (fortran == "True") {
    return Bad(path, dict_at, "the array is in Fortran order; save it in C order "
                              "(np.save(path, np.ascontiguousarray(a)))");
  }
  if (fortran != "False") {
    return Bad(path, dict_at, "the .npy header has no 'fortran_order': False");
  }
  absl::string_view shape = DictValue(dict, "shape");
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') {
    return Bad(path, dict_at, absl::StrCat("the .npy header has no shape tuple: ", dict));
  }
  shape = shape.substr(1, shape.size() - 2);
  uint64_t elements = 1;
  bool overflow = false;
  for (absl::string_view dim : absl::StrSplit(shape, ',', absl::SkipWhitespace())) {
    dim = absl::StripAsciiWhitespace(dim);
    if (!dim.empty() && dim.back() == 'L') dim.remove_suffix(1);  // Python 2 longs
    uint64_t n = 0;
    if (!absl::SimpleAtoi(dim, &n)) {
      return Bad(path, dict_at, absl::StrCat("shape entry '", dim, "' is not a size"));
    }
    h.shape.push_back(n);
    if (n != 0 && elements > UINT64_MAX / n) overflow = true;
    elements *= n;
  }
  if (overflow || elements > (UINT64_MAX - h.data_offset) / h.bytes_per_sample) {
    return Bad(path, dict_at, absl::StrCat("shape (", shape, ") is too large"));
  }
  h.data_bytes = elements * h.bytes_per_sample;
  if (h.data_offset + h.data_bytes != file_size) {
    return Bad(path, h.data_offset, absl::StrCat(
        "shape (", absl::StrJoin(h.shape, ", "), ") of ", h.descr, " needs ", h.data_bytes,
        " data bytes after the ", h.data_offset, "-byte header, but the file has ",
        file_size < h.data_offset ? 0 : file_size - h.data_offset,
        file_size < h.data_offset + h.data_bytes ? " (truncated)" : " (trailing bytes)"));
  }
  return h;
}

std::string FormatNpyHeader(const std::string& descr, const std::vector<uint64_t>& shape) {
  std::string dims = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) dims += ",";
  std::string dict = absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (",
                                  dims, "), }");
  // magic(6) + version(2) + len(2) + dict + '\n', padded to a multiple of 64.
  const size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict;
}

}  // namespace shotstream::npy
