// The SEG-Y and Seismic Unix source: files of fixed-length traces, each with its 240-byte
// trace header (and rev 2's additional ones). Its catalog is a scan of every trace header
// by the shot key, saved in the catalog directory and reused while the files are as they
// were; reads go through the coalescing reader (decoded, as stored, or located in the
// mapping for zero copy); header values come from the stored headers read with the
// samples, every standard field by name.
//
// Thread-safe after Open (source::Source).
#ifndef SHOTSTREAM_SERVER_SEGY_SEGY_SOURCE_H_
#define SHOTSTREAM_SERVER_SEGY_SEGY_SOURCE_H_

#include "server/source/source.h"

namespace shotstream::segy {

// format: segy. Claims every file no other format claims (SU by its .su name).
const source::Format& SegyFormat();

}  // namespace shotstream::segy

#endif  // SHOTSTREAM_SERVER_SEGY_SEGY_SOURCE_H_
