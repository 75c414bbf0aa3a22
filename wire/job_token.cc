#include "wire/job_token.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/crc32.h"

namespace shotstream::wire {
namespace {

constexpr char kMagic[] = "SSJT";
constexpr uint8_t kVersion = 1;
constexpr size_t kFixed = 4 + 1 + 4 * 8;  // magic, version, four u64

void PutU64(std::string* out, uint64_t v) {
  for (int b = 0; b < 8; ++b) out->push_back(static_cast<char>((v >> (8 * b)) & 0xFF));
}

uint64_t GetU64(const unsigned char* p) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * b);
  return v;
}

uint64_t Fnv1a(uint64_t h, const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

constexpr uint64_t kFnvOffset = 1469598103934665603ull;

}  // namespace

absl::StatusOr<std::string> EncodeJobToken(const JobToken& t) {
  if (t.dataset.size() > 255 || t.job.size() > 255 ||
      kFixed + 2 + t.dataset.size() + t.job.size() + 4 > kMaxJobTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a job token holds at most ", kMaxJobTokenBytes, " bytes: dataset '", t.dataset,
        "' and job '", t.job, "' together are too long (", t.dataset.size() + t.job.size(),
        " bytes of names; at most ", kMaxJobTokenBytes - kFixed - 6, ")"));
  }
  std::string out(kMagic, 4);
  out.push_back(static_cast<char>(kVersion));
  PutU64(&out, t.epoch);
  PutU64(&out, static_cast<uint64_t>(t.step));
  PutU64(&out, t.seed);
  PutU64(&out, t.fingerprint);
  out.push_back(static_cast<char>(t.dataset.size()));
  out += t.dataset;
  out.push_back(static_cast<char>(t.job.size()));
  out += t.job;
  const uint32_t crc = Crc32(0, out.data(), out.size());
  for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((crc >> (8 * b)) & 0xFF));
  return out;
}

absl::StatusOr<JobToken> DecodeJobToken(absl::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  if (n < 4 || std::memcmp(p, kMagic, 4) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resume: not a job token (", n, " bytes; a token is what commit() returned, "
        "starting \"SSJT\")"));
  }
  if (n < 5 || p[4] != kVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resume: a job token of version ", n < 5 ? 0 : p[4], "; this build reads version ",
        kVersion));
  }
  if (n > kMaxJobTokenBytes || n < kFixed + 2 + 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("resume: a job token of ", n, " bytes is cut or padded"));
  }
  const uint32_t crc = Crc32(0, p, n - 4);
  uint32_t want = 0;
  for (int b = 0; b < 4; ++b) want |= static_cast<uint32_t>(p[n - 4 + b]) << (8 * b);
  size_t at = kFixed;
  const size_t dataset_len = p[at];
  const size_t job_at = at + 1 + dataset_len;
  if (job_at >= n - 4 || job_at + 1 + p[job_at] != n - 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("resume: a job token of ", n, " bytes is cut or padded"));
  }
  if (crc != want) {
    return absl::InvalidArgumentError(
        "resume: the job token was altered (its CRC-32 does not match its bytes)");
  }
  JobToken t;
  t.epoch = GetU64(p + 5);
  t.step = static_cast<int64_t>(GetU64(p + 13));
  t.seed = GetU64(p + 21);
  t.fingerprint = GetU64(p + 29);
  t.dataset.assign(reinterpret_cast<const char*>(p + at + 1), dataset_len);
  t.job.assign(reinterpret_cast<const char*>(p + job_at + 1), p[job_at]);
  return t;
}

uint64_t JobFingerprint(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  uint64_t h = kFnvOffset;
  for (int64_t id : ids) {
    unsigned char b[8];
    for (int k = 0; k < 8; ++k) b[k] = (static_cast<uint64_t>(id) >> (8 * k)) & 0xFF;
    h = Fnv1a(h, b, 8);
  }
  return h;
}

uint64_t JobLineage(absl::string_view token) {
  if (token.empty()) return 0;
  return Fnv1a(kFnvOffset, reinterpret_cast<const unsigned char*>(token.data()), token.size());
}

}  // namespace shotstream::wire
