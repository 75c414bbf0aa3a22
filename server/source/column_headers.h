// What array sources (HDF5, Zarr) share for header values they hold as columns (one float64
// a trace, read at open): a column's value by name, the fields made where no column gives
// them (field_record: the shot id; trace_number: 1.. within the shot), and the 240-byte
// SEG-Y header made for raw-trace-header requests.
//
// Thread-safe: pure functions over the caller's columns.
#ifndef SHOTSTREAM_SERVER_SOURCE_COLUMN_HEADERS_H_
#define SHOTSTREAM_SERVER_SOURCE_COLUMN_HEADERS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "segy/trace_header.h"
#include "server/source/source.h"

namespace shotstream::source {

using HeaderColumns = std::vector<std::pair<std::string, std::vector<double>>>;

// Appends the names of `columns`, then field_record and trace_number where no column has
// them: a dataset's header_fields.
void AddColumnFields(const HeaderColumns& columns, std::vector<std::string>* fields);

// Header `h` of the trace at `row` of the columns, trace `i` (0-based) of shot `shot_id`:
// its column, else the made field, else 0.
double ColumnValue(const HeaderColumns& columns, uint64_t row, const segy::HeaderSelector& h,
                   int64_t shot_id, size_t i);

// The columns that have a SEG-Y field's name (the contract's, scaled coordinates and
// elevations included, or a standard field's), with the field: found once at open, not
// per trace.
struct ColumnPlace {
  segy::HeaderSelector selector;
  size_t column;  // index into the columns
};
std::vector<ColumnPlace> PlacesOf(const HeaderColumns& columns);

// The big-endian 240-byte header made for that trace: field_record, trace_number, the
// sample count and interval, then each placed column at its SEG-Y place as the writer
// places values (segy::PutTraceValues: coordinates and elevations with the trace's
// scalars, exact where a scalar allows; a column wins over what was made). A value no
// field holds (past 2^31 x 10000) is left 0, the others placed.
void MakeColumnHeader(const HeaderColumns& columns, const std::vector<ColumnPlace>& places,
                      uint64_t row, int64_t shot_id, size_t i, const SourceInfo& info,
                      uint8_t* dst);

// What one file of an array source holds of its traces' headers: its columns and their
// places, and, where the file stores them, the raw big-endian 240-byte records (a trace's
// record wins over its columns). `traces_per_shot` > 0: a trace's place in its shot's
// record is its row modulo this (a shot-shaped store, dead traces counted); 0: its place
// among the read's traces.
struct FileColumns {
  const HeaderColumns* columns = nullptr;
  const std::vector<ColumnPlace>* places = nullptr;
  const std::vector<uint8_t>* raw = nullptr;  // null or empty: none stored
  uint64_t traces_per_shot = 0;
};

// The header values of one read's traces from their files' columns (or records): the
// TraceHeaders an array source (HDF5, Zarr) returns. `files` (file id -> its columns)
// and `info` outlive it. Thread-compatible; read-only once made.
class ColumnTraceHeaders final : public TraceHeaders {
 public:
  ColumnTraceHeaders(std::function<FileColumns(uint32_t)> files, const SourceInfo* info,
                     const TraceRead& read)
      : files_(std::move(files)),
        info_(info),
        shot_id_(read.shot_id),
        traces_(read.traces.begin(), read.traces.end()) {}
  double Value(size_t i, const segy::HeaderSelector& h) const override;
  void BigEndianHeader(size_t i, uint8_t* dst) const override;

 private:
  size_t Position(size_t i, const FileColumns& f) const;
  const std::function<FileColumns(uint32_t)> files_;
  const SourceInfo* const info_;
  const int64_t shot_id_;
  const std::vector<io::TraceRef> traces_;
};

// Each trace's CRC-32 (read.trace_crc, when the read asks) over the float32 samples the
// read wrote: for sources that decode through a library, not the coalescing reader.
void TakeTraceCrcs(const TraceRead& read);

}  // namespace shotstream::source

#endif  // SHOTSTREAM_SERVER_SOURCE_COLUMN_HEADERS_H_
