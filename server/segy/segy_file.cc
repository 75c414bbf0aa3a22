#include "server/segy/segy_file.h"

#include <cerrno>
#include <cstring>
#include <functional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "segy/trace_header.h"

namespace shotstream::segy {

namespace {

using io::ReadFn;

uint32_t Read32(const uint8_t* p, ByteOrder order) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return order == ByteOrder::kBigEndian ? __builtin_bswap32(v) : v;
}
uint16_t Read16(const uint8_t* p, ByteOrder order) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return order == ByteOrder::kBigEndian ? __builtin_bswap16(v) : v;
}
double ReadDouble(const uint8_t* p, ByteOrder order) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if (order == ByteOrder::kBigEndian) v = __builtin_bswap64(v);
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}

// Binary header field at 1-based file byte `byte` (3201..3600).
const uint8_t* Bin(const uint8_t* head, int byte) { return head + byte - 1; }

absl::Status Err(const std::string& path, uint64_t byte, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": byte ", byte, ": ", what));
}

bool IsKnownFormat(int code) { return BytesPerSample(code) > 0; }

// segyio's rule for the sample interval: binary (3217-3218) and trace (117-118)
// intervals; a positive one wins, both positive must agree, otherwise 4000 us.
double ChooseInterval(int bin_dt, int trace_dt) {
  if (bin_dt > 0 && trace_dt > 0) return bin_dt == trace_dt ? bin_dt : 4000.0;
  if (bin_dt > 0) return bin_dt;
  if (trace_dt > 0) return trace_dt;
  return 4000.0;
}

// The stanza that ends a variable count of extended textual headers. Matched as
// upstream segyio does in practice: case-insensitive, blanks ignored, ASCII or EBCDIC.
char EbcdicToAscii(uint8_t c) {
  if (c >= 0x81 && c <= 0x89) return static_cast<char>('a' + (c - 0x81));
  if (c >= 0x91 && c <= 0x99) return static_cast<char>('j' + (c - 0x91));
  if (c >= 0xA2 && c <= 0xA9) return static_cast<char>('s' + (c - 0xA2));
  if (c >= 0xC1 && c <= 0xC9) return static_cast<char>('A' + (c - 0xC1));
  if (c >= 0xD1 && c <= 0xD9) return static_cast<char>('J' + (c - 0xD1));
  if (c >= 0xE2 && c <= 0xE9) return static_cast<char>('S' + (c - 0xE2));
  switch (c) {
    case 0x40: return ' ';
    case 0x4D: return '(';
    case 0x5D: return ')';
    case 0x7A: return ':';
    default: return '?';
  }
}

bool HasEndText(const uint8_t* record, size_t n) {
  for (bool ebcdic : {false, true}) {
    std::string folded;
    folded.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      char c = ebcdic ? EbcdicToAscii(record[i]) : static_cast<char>(record[i]);
      if (c == ' ') continue;
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      folded.push_back(c);
    }
    if (absl::StrContains(folded, "((seg:endtext))")) return true;
  }
  return false;
}

// What a file that does not parse as SEG-Y looks like, for the error: files that start
// with a 240-byte trace header instead of the 3600-byte file header are common (Seismic
// Unix files given a .sgy name; PASSCAL single-trace files of passive recorders). Empty
// when it looks like neither.
std::string DescribeNonSegy(const uint8_t* head, size_t head_size, uint64_t file_size) {
  if (head_size < kTraceHeaderBytes) return "";
  for (ByteOrder order : {ByteOrder::kBigEndian, ByteOrder::kLittleEndian}) {
    // PASSCAL: one trace; samples at 115-116, or at 229-232 when that says 32767; data
    // form at 205-206 (0: int16, 1: int32).
    uint32_t ns = Read16(head + 114, order);
    if (ns == 32767) ns = Read32(head + 228, order);
    const int form = Read16(head + 204, order);
    if (ns != 0 && (form == 0 || form == 1) &&
        file_size == kTraceHeaderBytes + uint64_t{ns} * (form == 0 ? 2 : 4)) {
      return absl::StrCat("; it looks like a PASSCAL single-trace SEG-Y file (one 240-byte "
                          "trace header of ", ns, " ", form == 0 ? "int16" : "int32",
                          " samples, ", ByteOrderName(order),
                          ", no 3600-byte file header), which is not read: convert it to "
                          "SEG-Y or SU");
    }
  }
  for (ByteOrder order : {ByteOrder::kBigEndian, ByteOrder::kLittleEndian}) {
    const uint32_t ns = Read16(head + 114, order);
    const uint64_t trace_bytes = kTraceHeaderBytes + 4ull * ns;
    if (ns != 0 && file_size % trace_bytes == 0) {
      return absl::StrCat("; it looks like a Seismic Unix file (no 3600-byte SEG-Y file "
                          "header; ", file_size / trace_bytes, " traces of 240 header bytes + ",
                          ns, " samples, ", ByteOrderName(order), "): name it .su");
    }
  }
  return "";
}

absl::StatusOr<SegyLayout> ParseSeismicUnix(const std::string& path, const uint8_t* head,
                                            size_t head_size, uint64_t file_size,
                                            const OpenOptions& options) {
  if (file_size == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": empty Seismic Unix file"));
  }
  if (head_size < kTraceHeaderBytes) {
    return Err(path, file_size, "Seismic Unix file shorter than one 240-byte trace header");
  }
  std::vector<ByteOrder> orders;
  if (options.byte_order) {
    orders.push_back(*options.byte_order);
  } else {
    orders = {ByteOrder::kBigEndian, ByteOrder::kLittleEndian};
  }
  for (ByteOrder order : orders) {
    const uint32_t ns = Read16(head + 114, order);
    if (ns == 0) continue;
    const uint64_t trace_bytes = kTraceHeaderBytes + 4ull * ns;
    if (file_size % trace_bytes != 0) continue;
    SegyLayout l;
    l.seismic_unix = true;
    l.byte_order = order;
    l.format = SampleFormat::kIeeeFloat32;
    l.bytes_per_sample = 4;
    l.n_samples = ns;
    l.sample_interval_us = ChooseInterval(0, static_cast<int16_t>(Read16(head + 116, order)));
    l.first_trace_offset = 0;
    l.trace_bytes = trace_bytes;
    l.n_traces = file_size / trace_bytes;
    return l;
  }
  return Err(path, 115,
             "Seismic Unix trace header sample count (bytes 115-116) does not divide the file "
             "into whole traces in either byte order");
}

absl::StatusOr<SegyLayout> ParseSegyLayout(const std::string& path, const uint8_t* head,
                                           size_t head_size, uint64_t file_size,
                                           const OpenOptions& options, const ReadFn& read_at) {
  if (file_size < kFileHeaderBytes || head_size < kFileHeaderBytes) {
    return Err(path, file_size,
               absl::StrCat("file is ", file_size,
                            " bytes, shorter than the 3600-byte SEG-Y file header"));
  }
  SegyLayout l;
  // Byte order: the rev 2 byte-order word, else the one in which the format code is valid.
  const uint32_t order_word = Read32(Bin(head, 3297), ByteOrder::kBigEndian);
  if (options.byte_order) {
    l.byte_order = *options.byte_order;
  } else if (order_word == 0x01020304u) {
    l.byte_order = ByteOrder::kBigEndian;
  } else if (order_word == 0x04030201u) {
    l.byte_order = ByteOrder::kLittleEndian;
  } else {
    const int be = static_cast<int16_t>(Read16(Bin(head, 3225), ByteOrder::kBigEndian));
    const int le = static_cast<int16_t>(Read16(Bin(head, 3225), ByteOrder::kLittleEndian));
    if (IsKnownFormat(be)) {
      l.byte_order = ByteOrder::kBigEndian;
    } else if (IsKnownFormat(le)) {
      l.byte_order = ByteOrder::kLittleEndian;
    } else {
      return Err(path, 3225,
                 absl::StrCat("sample format code is ", be, " read big-endian and ", le,
                              " read little-endian; neither is a SEG-Y format, so the byte "
                              "order cannot be detected"));
    }
  }
  const ByteOrder order = l.byte_order;
  const int format_code = static_cast<int16_t>(Read16(Bin(head, 3225), order));
  auto format = SampleFormatFromCode(format_code);
  if (!format.ok()) {
    return Err(path, 3225, format.status().message());
  }
  l.format = *format;
  l.bytes_per_sample = BytesPerSample(format_code);

  // Revision (bytes 3501-3502: major, minor). Only a real rev 2.x/3.0 word switches on
  // the rev 2 fields; anything else (0x0064 for "1.00", garbage) is read as rev 1.
  const int rev_major = head[3500];
  const int rev_minor = head[3501];
  const bool rev2 = (rev_major == 2 && rev_minor <= 1) || (rev_major == 3 && rev_minor == 0);
  l.revision_major = rev2 ? rev_major : (rev_major == 1 && rev_minor == 0 ? 1 : 0);
  if (!rev2 && !(rev_major <= 1 && rev_minor == 0)) {
    l.notes.push_back(absl::StrCat(
        "revision field (bytes 3501-3502) is 0x", absl::Hex(rev_major * 256 + rev_minor,
                                                              absl::kZeroPad4),
        ", not a SEG-Y revision; read as rev 1"));
  }

  const int ext = static_cast<int16_t>(Read16(Bin(head, 3505), order));
  if (ext >= 0) {
    l.extended_textual_headers = ext;
  } else if (ext == -1) {
    // Variable count: 3200-byte records up to and including ((SEG: EndText)).
    std::vector<uint8_t> record(kTextualHeaderBytes);
    int count = 0;
    for (uint64_t pos = kFileHeaderBytes;; pos += kTextualHeaderBytes) {
      if (pos + kTextualHeaderBytes > file_size) {
        return Err(path, 3505,
                   "extended textual header count is -1 but no ((SEG: EndText)) record was "
                   "found before the end of the file");
      }
      SS_RETURN_IF_ERROR(read_at(pos, kTextualHeaderBytes, record.data()));
      ++count;
      if (HasEndText(record.data(), record.size())) break;
    }
    l.extended_textual_headers = count;
  } else {
    return Err(path, 3505, absl::StrCat("extended textual header count ", ext,
                                        " is negative (only -1, variable, is allowed)"));
  }

  // Trace headers per trace: rev 2's bytes 3507-3508 count additional 240-byte headers.
  int extra_headers = 0;
  if (rev2) {
    const int extra = static_cast<int16_t>(Read16(Bin(head, 3507), order));
    if (extra < 0 || extra > 1000) {
      return Err(path, 3507, absl::StrCat("additional trace header count ", extra,
                                          " is out of range"));
    }
    extra_headers = extra;
  }
  l.trace_headers_per_trace = 1 + extra_headers;
  l.trace_header_bytes = 240ull * l.trace_headers_per_trace;
  l.first_trace_offset =
      kFileHeaderBytes + uint64_t{kTextualHeaderBytes} * l.extended_textual_headers;
  if (file_size < l.first_trace_offset) {
    return Err(path, 3505,
               absl::StrCat(l.extended_textual_headers,
                            " extended textual headers do not fit in a file of ", file_size,
                            " bytes"));
  }
  const uint64_t data = file_size - l.first_trace_offset;

  // Samples per trace, as segyio and SEG-Y practice have it: the binary header's count
  // (3221-3222, unsigned; rev 2's extended count 3269-3272 where that is 0) and the
  // format fix the trace size. When the file is the header plus whole such traces, that
  // is the layout, whatever the trace headers say (their counts are informational: the
  // catalog scan reports disagreements). Only when the sizes do not add up are the other
  // counts tried (the extended count, then the first trace header's bytes 115-116), each
  // said in a note; otherwise the file is refused, naming the byte where it stops adding up.
  const uint32_t bin_ns = Read16(Bin(head, 3221), order);
  const uint32_t ext_ns = Read32(Bin(head, 3269), order);
  struct Candidate {
    uint32_t ns;
    const char* source;
  };
  std::vector<Candidate> candidates;
  if (rev2 && bin_ns == 0 && ext_ns != 0) {
    candidates.push_back({ext_ns, "the extended sample count (bytes 3269-3272)"});
  }
  if (bin_ns != 0) candidates.push_back({bin_ns, "the binary header (bytes 3221-3222)"});
  if (ext_ns != 0 && ext_ns <= 100'000'000 && !(rev2 && bin_ns == 0)) {
    candidates.push_back({ext_ns, "the extended sample count (bytes 3269-3272)"});
  }
  uint8_t th[kTraceHeaderBytes] = {};  // the first trace header, read once
  uint32_t trace_ns = 0;
  if (data >= kTraceHeaderBytes) {
    SS_RETURN_IF_ERROR(read_at(l.first_trace_offset, kTraceHeaderBytes, th));
    trace_ns = Read16(th + 114, order);
    if (trace_ns != 0) {
      candidates.push_back({trace_ns, "the first trace header (bytes 115-116)"});
    }
  }
  if (candidates.empty()) {
    return Err(path, 3221, "number of samples per trace is 0 (binary header bytes 3221-3222, "
                           "3269-3272 and trace header bytes 115-116)");
  }
  // Each count with the trace headers the revision says, then (a rev 2 word that was
  // wrong about additional headers) with one header per trace.
  std::vector<int> header_counts = {l.trace_headers_per_trace};
  if (l.trace_headers_per_trace != 1) header_counts.push_back(1);
  bool fits = false;
  for (int headers_per_trace : header_counts) {
    for (size_t c = 0; c < candidates.size() && !fits; ++c) {
      const uint64_t trace_bytes =
          240ull * headers_per_trace + uint64_t{candidates[c].ns} * l.bytes_per_sample;
      if (data % trace_bytes != 0) continue;
      fits = true;
      l.n_samples = candidates[c].ns;
      if (c > 0) {
        l.notes.push_back(absl::StrCat(
            "the sample count of ", candidates[0].source, ", ", candidates[0].ns,
            ", does not divide the file into whole traces; ", candidates[c].ns, " from ",
            candidates[c].source, " does, and is used"));
      }
      if (headers_per_trace != l.trace_headers_per_trace) {
        l.notes.push_back(absl::StrCat(
            "the binary header (bytes 3507-3508) says ", extra_headers,
            " additional trace headers, but the file holds whole traces only with none; "
            "read with one 240-byte header per trace"));
        l.trace_headers_per_trace = headers_per_trace;
        l.trace_header_bytes = 240ull * headers_per_trace;
      }
    }
    if (fits) break;
  }
  if (!fits) {
    l.n_samples = candidates.front().ns;
    const uint64_t tb = l.header_bytes() + l.sample_bytes();
    return Err(path, l.first_trace_offset + data / tb * tb,
               absl::StrCat("file size ", file_size, " is not the ", l.first_trace_offset,
                            "-byte header plus whole traces of ", tb, " bytes (",
                            l.n_samples, " samples of ", l.bytes_per_sample, " bytes + ",
                            l.header_bytes(), " header bytes): ", data % tb,
                            " bytes left over (truncated file, or wrong n_samples/format)",
                            candidates.size() > 1
                                ? "; no other sample count in the headers fits either"
                                : ""));
  }
  l.trace_bytes = l.header_bytes() + l.sample_bytes();
  l.n_traces = data / l.trace_bytes;

  const int bin_dt = static_cast<int16_t>(Read16(Bin(head, 3217), order));
  const int trace_dt = l.n_traces > 0 ? static_cast<int16_t>(Read16(th + 116, order)) : 0;
  l.sample_interval_us = ChooseInterval(bin_dt, trace_dt);
  if (rev2 && bin_dt == 0 && trace_dt <= 0) {
    const double ext_dt = ReadDouble(Bin(head, 3273), order);
    if (ext_dt > 0 && ext_dt < 1e9) l.sample_interval_us = ext_dt;
  }
  return l;
}

// SU files by their name; everything else as SEG-Y, and a file refused as SEG-Y that looks
// like a file of trace headers alone says so.
absl::StatusOr<SegyLayout> ParseLayoutImpl(const std::string& path, const uint8_t* head,
                                           size_t head_size, uint64_t file_size,
                                           const OpenOptions& options, const ReadFn& read_at) {
  if (absl::EndsWith(path, ".su")) {
    return ParseSeismicUnix(path, head, head_size, file_size, options);
  }
  absl::StatusOr<SegyLayout> l =
      ParseSegyLayout(path, head, head_size, file_size, options, read_at);
  if (!l.ok() && absl::IsInvalidArgument(l.status())) {
    const std::string hint = DescribeNonSegy(head, head_size, file_size);
    if (!hint.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(l.status().message(), hint));
    }
  }
  return l;
}

}  // namespace

absl::StatusOr<SegyLayout> ParseSegyHeaders(const std::string& path, const uint8_t* head,
                                            size_t head_size, uint64_t file_size,
                                            const OpenOptions& options) {
  // Reads are served from `head` only (fuzzers and tests pass the whole file).
  ReadFn read_at = [&](uint64_t off, uint64_t len, uint8_t* dst) -> absl::Status {
    if (off + len > head_size) {
      return absl::DataLossError(absl::StrCat(path, ": byte ", off, ": past the end"));
    }
    std::memcpy(dst, head + off, len);
    return absl::OkStatus();
  };
  return ParseLayoutImpl(path, head, head_size, file_size, options, read_at);
}

absl::StatusOr<std::unique_ptr<io::TraceFile>> OpenSegyFile(const std::string& path,
                                                          const OpenOptions& options) {
  return io::TraceFile::Open(
      path, options.io, kHeadBytes,
      [&options](const std::string& p, const uint8_t* head, size_t head_size,
                 uint64_t file_size, const ReadFn& read_at) -> absl::StatusOr<io::TraceLayout> {
        SS_ASSIGN_OR_RETURN(SegyLayout l,
                            ParseLayoutImpl(p, head, head_size, file_size, options, read_at));
        return io::TraceLayout(std::move(l));
      },
      /*cache=*/nullptr, options.env);
}

}  // namespace shotstream::segy
