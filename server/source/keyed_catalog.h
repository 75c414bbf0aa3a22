// What the array sources (HDF5, Zarr) share for [traces, samples] arrays: a catalog from
// each trace's shot id (a header column's value), and the shot keys such arrays take.
//
// Thread-safe: pure functions.
#ifndef SHOTSTREAM_SERVER_SOURCE_KEYED_CATALOG_H_
#define SHOTSTREAM_SERVER_SOURCE_KEYED_CATALOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/catalog/catalog.h"
#include "server/io/trace_ref.h"

namespace shotstream::source {

struct KeyedTrace {
  int64_t shot_id = 0;
  io::TraceRef trace;
};

// Shots sorted by id, each shot's traces in the order given; a trace's offset is its
// index in its array.
catalog::Catalog CatalogByKey(const std::vector<KeyedTrace>& traces);

// A header value as a shot id; INVALID_ARGUMENT naming `where` when it is not an integer.
absl::StatusOr<int64_t> ShotIdOf(double v, const std::string& where);

// OK for a header column's name; INVALID_ARGUMENT saying that `format`'s shots are keyed
// by one (not byte:N nor source_xy).
absl::Status CheckColumnKey(const std::string& key, absl::string_view format);

}  // namespace shotstream::source

#endif  // SHOTSTREAM_SERVER_SOURCE_KEYED_CATALOG_H_
