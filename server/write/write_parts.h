// Multi-part writes (WriteStart.parts): where a write's parts wait, and the join that makes
// them one dataset. Part I of write W of dataset NAME is DIR/.NAME.parts-W/part-I.sgy, a
// whole SEG-Y file (a DatasetWriter with `replace`), and part-I.ids beside it: its shot
// ids, int64 little-endian, written before the .sgy is renamed in, so a .sgy present
// always has its ids. The join copies the parts' traces, in index order, behind one file
// header into DIR/NAME.sgy (kernel-side copies, then fsync and a rename: all or nothing).
//
// Thread-compatible functions: the registry's reservation of NAME keeps two joins apart;
// parts written at once are different files.
#ifndef SHOTSTREAM_SERVER_WRITE_WRITE_PARTS_H_
#define SHOTSTREAM_SERVER_WRITE_WRITE_PARTS_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "server/env/env.h"
#include "absl/status/statusor.h"

namespace shotstream::write {

inline constexpr uint32_t kMaxWriteParts = 1000000;

std::string PartsDir(const std::string& dir, const std::string& name,
                     const std::string& write_id);
std::string PartName(uint32_t index);  // "part-000012" (the DatasetWriter's name)

// Creates the parts directory (an existing one is fine).
absl::Status MakePartsDir(const std::string& parts_dir, env::Env* env = env::Env::Default());

// Writes part `index`'s shot ids beside it (temporary, fsync, rename: through `env`).
absl::Status WritePartIds(const std::string& parts_dir, uint32_t index,
                          const std::set<int64_t>& ids, env::Env* env = env::Env::Default());
// Part `index`'s shot ids, as WritePartIds wrote them.
absl::StatusOr<std::vector<int64_t>> ReadPartIds(const std::string& parts_dir, uint32_t index,
                                                 env::Env* env = env::Env::Default());

struct JoinSpec {
  std::string dir;       // the write directory
  std::string name;      // the dataset
  std::string write_id;
  uint32_t count = 0;
  double sample_interval_us = 0;
  int format = 5;
  std::string writer;    // who asked, for the textual header
  env::Env* env = env::Env::Default();  // where the parts are read and the file written
};

struct JoinedParts {
  std::string path;  // DIR/NAME.sgy
  uint64_t shots = 0;
  uint64_t traces = 0;
  uint64_t sample_bytes = 0;  // as float32, as a one-call write counts them
};

// Joins the parts into DIR/NAME.sgy and removes the parts directory. FAILED_PRECONDITION
// naming the parts missing; INVALID_ARGUMENT for a shot id in two parts or a part whose
// sample count, interval or format differs; ALREADY_EXISTS when DIR/NAME.sgy exists;
// RESOURCE_EXHAUSTED for a full disk. On failure the parts stay (the commit may be
// retried) and no temporary is left.
absl::StatusOr<JoinedParts> JoinParts(const JoinSpec& spec);

// Removes the parts directories in `dir` (writes a restarted server cannot finish: their
// commit then names the parts missing); returns their names.
std::vector<std::string> RemoveParts(const std::string& dir,
                                     env::Env* env = env::Env::Default());

}  // namespace shotstream::write

#endif  // SHOTSTREAM_SERVER_WRITE_WRITE_PARTS_H_
