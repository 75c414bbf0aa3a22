// Persistent catalogs: a versioned, checksummed file per dataset, with the source files'
// paths, sizes, mtimes and content fingerprints so that a stale catalog is never used.
//
// File layout (little-endian): "SSCATLG\0", u32 version, the shot key, the source files
// (path, size, mtime_ns, fingerprint), the counts (u64 shots, segments, list entries,
// files, source positions), zeros to an 8-byte boundary, then the catalog's compact
// columns as it holds them in memory, each from an 8-byte boundary
// (catalog.h): shots (i64 id, u64 first segment, u32 traces, u32 segments), segments (u64
// first, u32 file id, u32 count and kind), the u32 trace list, each file's geometry (u64
// first trace offset, u64 stride), the source positions (i64 id, f64 x, f64 y; source_xy
// only), and a CRC-32 of everything before it. Loading is one read and one copy of each
// column: no trace header is read, no per-trace record built.
//
// Thread-compatible: pure functions over files, reached through an env::Env (the
// process's POSIX one when null).
#ifndef SHOTSTREAM_SERVER_CATALOG_CATALOG_STORE_H_
#define SHOTSTREAM_SERVER_CATALOG_CATALOG_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/catalog/catalog.h"
#include "server/env/env.h"
#include "server/io/trace_file.h"

namespace shotstream::catalog {

inline constexpr uint32_t kCatalogVersion = 3;  // 2: source positions; 3: compact columns

struct SourceFile {
  std::string path;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t fingerprint = 0;  // CRC-32 of the file header and the first and last trace header
  bool operator==(const SourceFile& o) const {
    return path == o.path && size == o.size && mtime_ns == o.mtime_ns &&
           fingerprint == o.fingerprint;
  }
};

// What a catalog was built from; a saved catalog is used only when this matches exactly.
struct CatalogSource {
  std::string shot_key;
  std::vector<SourceFile> files;
};

// Stats and the fingerprint of each file (3 small reads per file).
absl::StatusOr<CatalogSource> DescribeSource(absl::Span<const io::TraceFile* const> files,
                                             const std::string& shot_key);

// Writes the catalog atomically (a temporary of its own, synced, renamed over `path`).
// Errors name the file: RESOURCE_EXHAUSTED for a full disk, UNAVAILABLE for I/O errors.
absl::Status SaveCatalog(const std::string& path, const CatalogSource& source,
                         const Catalog& catalog, env::Env* env = nullptr);

// The saved catalog, or: NOT_FOUND (no file), DATA_LOSS (corrupt: bad magic, version,
// checksum or size), FAILED_PRECONDITION (stale: the message says which file changed).
absl::StatusOr<Catalog> LoadCatalog(const std::string& path, const CatalogSource& expected,
                                     env::Env* env = nullptr);

}  // namespace shotstream::catalog

#endif  // SHOTSTREAM_SERVER_CATALOG_CATALOG_STORE_H_
