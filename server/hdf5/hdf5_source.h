// The HDF5 source: files read through libhdf5 (server/hdf5/hdf5_file): a dataset (/data,
// or array_path) [shots, traces, samples] with ids from `shot_ids` beside it (1.. without),
// or [traces, samples] grouped into shots by the shot key's column in `headers/`. Samples
// are converted to float32 by the library, one read per run of consecutive traces; header
// values are the files' columns (any name, float64, exact), with field_record and
// trace_number made where no column gives them.
//
// Thread-safe after Open (source::Source; the library calls hold one process-wide lock).
#ifndef SHOTSTREAM_SERVER_HDF5_HDF5_SOURCE_H_
#define SHOTSTREAM_SERVER_HDF5_HDF5_SOURCE_H_

#include "server/source/source.h"

namespace shotstream::hdf5 {

// format: hdf5. Claims .h5 and .hdf5 names and files with the HDF5 signature.
const source::Format& Hdf5Format();

}  // namespace shotstream::hdf5

#endif  // SHOTSTREAM_SERVER_HDF5_HDF5_SOURCE_H_
