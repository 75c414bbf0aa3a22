// The Zarr source: stores (directories) in Zarr v2 or v3 whose samples array is
//   [shots, traces..., samples]: a shot per index of the first axis (ids from the first
//       dimension's coordinate array, e.g. MDIO's shot_point, or `shot_ids`, or 1..), its
//       traces every index of the axes between (MDIO: cable x channel), dead traces left
//       out where a `trace_mask` says so; or
//   [traces, samples]: traces grouped into shots by the shot key's header column.
// Header values come from a structured `headers` array (MDIO: SEG-Y fields by the segy
// library's names, served as SEG-Y's standard fields) or from `headers/NAME` arrays and
// coordinate arrays (columns by name, MDIO's source_coord_x as source_x ...). The array is
// `array_path` inside the store, else MDIO's default variable (amplitude), else `data`,
// else the store itself. Chunks are read as a read needs them (a window reads only the
// time chunks it touches) and decoded chunks are kept in a bounded cache per dataset.
//
// Thread-safe after Open (source::Source).
#ifndef SHOTSTREAM_SERVER_ZARR_ZARR_SOURCE_H_
#define SHOTSTREAM_SERVER_ZARR_ZARR_SOURCE_H_

#include "server/source/source.h"

namespace shotstream::zarr {

// Decoded chunks a Zarr dataset keeps (least recently used out first).
inline constexpr uint64_t kChunkCacheBytes = 128ull << 20;

// format: zarr. Claims directories with .zarray, .zgroup or zarr.json.
const source::Format& ZarrFormat();

}  // namespace shotstream::zarr

#endif  // SHOTSTREAM_SERVER_ZARR_ZARR_SOURCE_H_
