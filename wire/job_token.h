// JobToken: what a job's commit gives a trainer to store with its checkpoint, and what a
// resume hands back: (dataset, job, epoch, step) and what identifies the job (its seed,
// the fingerprint of its shot ids), at most kMaxJobTokenBytes, with a CRC-32 so that a
// token cut, altered or from something else is refused by name. The CRC is an integrity
// check, not a signature: who may resume a job is the server's auth's to say.
// Made by the clients (C++ and the Python fallback: shotstream/wire.py, the same bytes),
// read by the server and the clients. Pure functions, thread-safe.
#ifndef SHOTSTREAM_WIRE_JOB_TOKEN_H_
#define SHOTSTREAM_WIRE_JOB_TOKEN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shotstream::wire {

inline constexpr size_t kMaxJobTokenBytes = 256;

struct JobToken {
  std::string dataset;
  std::string job;
  uint64_t epoch = 0;
  int64_t step = 0;
  uint64_t seed = 0;
  uint64_t fingerprint = 0;  // JobFingerprint of every shot id of the job
};

// Layout, little-endian: "SSJT", version 1 (1 byte), epoch u64, step i64, seed u64,
// fingerprint u64, dataset (u8 length, bytes), job (u8 length, bytes), CRC-32 (u32) of all
// before it. INVALID_ARGUMENT when the names make it longer than kMaxJobTokenBytes.
absl::StatusOr<std::string> EncodeJobToken(const JobToken& token);
// INVALID_ARGUMENT saying what is wrong: not a token, another version, cut, or altered.
absl::StatusOr<JobToken> DecodeJobToken(absl::string_view bytes);

// The fingerprint of a job's ids, order-free (FNV-1a over the sorted ids' little-endian
// bytes): every consumer of a job must agree on it.
uint64_t JobFingerprint(std::vector<int64_t> shot_ids);

// Identifies a resume's lineage: FNV-1a of the token's bytes (0 for none).
uint64_t JobLineage(absl::string_view token);

}  // namespace shotstream::wire

#endif  // SHOTSTREAM_WIRE_JOB_TOKEN_H_
