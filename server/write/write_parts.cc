#include "server/write/write_parts.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "segy/segy_writer.h"
#include "segy/trace_header.h"
#include "server/write/dataset_writer.h"

namespace shotstream::write {
namespace {

constexpr absl::string_view kPartsInfix = ".parts-";
constexpr size_t kFileHeaderBytes = 3600;
constexpr size_t kBinaryHeaderAt = 3200;

// An Env's error saying what was being done: "WHAT PATH: reason", its code kept
// (RESOURCE_EXHAUSTED for a full disk, UNAVAILABLE for an I/O error).
absl::Status IoError(const std::string& what, const std::string& path, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(what, " ", path, ": ", env::WithoutPath(s, path)));
}

uint16_t BigEndian16(const char* p) {
  return static_cast<uint16_t>((static_cast<uint8_t>(p[0]) << 8) | static_cast<uint8_t>(p[1]));
}

// Removes `dir` and the files in it.
void RemoveTree(env::Env* env, const std::string& dir) {
  if (absl::StatusOr<std::vector<std::string>> names = env->List(dir); names.ok()) {
    for (const std::string& n : *names) env->Remove(absl::StrCat(dir, "/", n)).IgnoreError();
  }
  env->RemoveDir(dir).IgnoreError();
}

struct Part {
  std::string path;
  std::unique_ptr<env::RandomAccessFile> file;
  uint64_t size = 0;
};

}  // namespace

std::string PartsDir(const std::string& dir, const std::string& name,
                     const std::string& write_id) {
  return absl::StrCat(dir, "/.", name, kPartsInfix, write_id);
}

std::string PartName(uint32_t index) { return absl::StrFormat("part-%06u", index); }

absl::Status MakePartsDir(const std::string& parts_dir, env::Env* env) {
  if (absl::Status s = env->CreateDir(parts_dir); !s.ok()) {
    return IoError("cannot create", parts_dir, s);
  }
  return absl::OkStatus();
}

absl::Status WritePartIds(const std::string& parts_dir, uint32_t index,
                          const std::set<int64_t>& ids, env::Env* env) {
  const std::vector<int64_t> v(ids.begin(), ids.end());  // little-endian: the hosts we build for
  return env::WriteFileAtomically(
      env, absl::StrCat(parts_dir, "/", PartName(index), ".ids"),
      absl::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
}

absl::StatusOr<std::vector<int64_t>> ReadPartIds(const std::string& parts_dir, uint32_t index,
                                                 env::Env* env) {
  const std::string path = absl::StrCat(parts_dir, "/", PartName(index), ".ids");
  SS_ASSIGN_OR_RETURN(const std::string bytes, env::ReadFileToString(env, path));
  if (bytes.size() % sizeof(int64_t) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": ", bytes.size(),
                                            " bytes, not a whole number of shot ids"));
  }
  std::vector<int64_t> ids(bytes.size() / sizeof(int64_t));
  std::memcpy(ids.data(), bytes.data(), bytes.size());
  return ids;
}

absl::StatusOr<JoinedParts> JoinParts(const JoinSpec& spec) {
  env::Env* const env = spec.env;
  const std::string parts_dir = PartsDir(spec.dir, spec.name, spec.write_id);
  const std::string what =
      absl::StrCat("dataset '", spec.name, "', multi-part write '", spec.write_id, "'");
  std::vector<uint32_t> missing;
  for (uint32_t i = 0; i < spec.count; ++i) {
    const std::string p = absl::StrCat(parts_dir, "/", PartName(i));
    if (!env->Stat(absl::StrCat(p, ".sgy")).ok() || !env->Stat(absl::StrCat(p, ".ids")).ok()) {
      missing.push_back(i);
    }
  }
  if (!missing.empty()) {
    const size_t shown = std::min<size_t>(missing.size(), 20);
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": ", missing.size(), " of its ", spec.count, " parts are not written (",
        missing.size() == spec.count ? "none is" : "parts ",
        missing.size() == spec.count
            ? ""
            : absl::StrJoin(missing.begin(), missing.begin() + shown, ", "),
        shown < missing.size() ? ", ..." : "",
        missing.size() == spec.count ? "" : " missing",
        "); write them, then commit again (a server restart removes the parts)"));
  }
  // Shot ids: in one part each.
  std::map<int64_t, uint32_t> owner;
  for (uint32_t i = 0; i < spec.count; ++i) {
    SS_ASSIGN_OR_RETURN(const std::vector<int64_t> ids, ReadPartIds(parts_dir, i, spec.env));
    for (int64_t id : ids) {
      auto [it, fresh] = owner.emplace(id, i);
      if (!fresh) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": shot ", id, " is in parts ",
                                                       it->second, " and ", i));
      }
    }
  }
  // The parts: one binary file header (sample count, interval, format), whole traces.
  std::vector<Part> parts(spec.count);
  auto close_all = [&parts] {
    for (Part& p : parts) p.file.reset();
  };
  uint32_t n_samples = 0;
  std::string binary0;
  JoinedParts out;
  for (uint32_t i = 0; i < spec.count; ++i) {
    Part& p = parts[i];
    p.path = absl::StrCat(parts_dir, "/", PartName(i), ".sgy");
    absl::StatusOr<std::unique_ptr<env::RandomAccessFile>> opened = env->OpenRead(p.path);
    absl::StatusOr<env::FileStat> st =
        opened.ok() ? (*opened)->Stat() : absl::StatusOr<env::FileStat>(opened.status());
    if (!st.ok()) {
      close_all();
      return IoError("cannot open", p.path, st.status());
    }
    p.file = *std::move(opened);
    p.size = st->size;
    char head[kFileHeaderBytes];
    const absl::StatusOr<size_t> got = p.file->Read(0, sizeof(head), head);
    if (!got.ok()) {
      close_all();
      return IoError("reading", p.path, got.status());
    }
    if (*got != sizeof(head)) {
      close_all();
      return absl::DataLossError(absl::StrCat(p.path, ": shorter than a SEG-Y file header"));
    }
    const std::string binary(head + kBinaryHeaderAt, kFileHeaderBytes - kBinaryHeaderAt);
    const uint32_t n = BigEndian16(head + 3220);
    const int format = BigEndian16(head + 3224);
    if (i == 0) {
      n_samples = n;
      binary0 = binary;
      const std::string want =
          segy::FileHeader({}, n, spec.sample_interval_us, spec.format).substr(kBinaryHeaderAt);
      if (binary != want) {
        close_all();
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": the commit gives sample interval ", spec.sample_interval_us,
            " us and format ", spec.format, "; part 0 was written with interval ",
            BigEndian16(head + 3216), " us and format ", format));
      }
    } else if (binary != binary0) {
      close_all();
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": part ", i, " has ", n, " samples per trace, interval ",
          BigEndian16(head + 3216), " us, format ", format, "; part 0 has ", n_samples,
          " samples, interval ", BigEndian16(binary0.data() + 16), " us, format ",
          BigEndian16(binary0.data() + 24)));
    }
    const uint64_t trace_bytes =
        segy::kTraceHeaderBytes + uint64_t{n} * segy::WrittenBytesPerSample(format);
    if (p.size < kFileHeaderBytes || (p.size - kFileHeaderBytes) % trace_bytes != 0) {
      close_all();
      return absl::DataLossError(
          absl::StrCat(p.path, ": ", p.size, " bytes is not whole traces of ", trace_bytes));
    }
    out.traces += (p.size - kFileHeaderBytes) / trace_bytes;
  }
  out.shots = owner.size();
  out.sample_bytes = out.traces * n_samples * sizeof(float);
  // The joined file: a temporary that RemoveTemporaries knows, renamed into place.
  static std::atomic<uint64_t> counter{0};
  const std::string temp = absl::StrCat(spec.dir, "/.", spec.name, ".sgy.partial-", ::getpid(),
                                        "-join-", counter.fetch_add(1));
  out.path = WrittenPath(spec.dir, spec.name);
  absl::StatusOr<std::unique_ptr<env::WritableFile>> file =
      env->OpenWrite(temp, env::WriteMode::kCreateNew);
  if (!file.ok()) {
    close_all();
    return IoError("cannot create", temp, file.status());
  }
  auto fail = [&](absl::Status s) {
    file->reset();
    env->Remove(temp).IgnoreError();
    close_all();
    return s;
  };
  const std::string head = segy::FileHeader(
      WrittenTextLines(spec.name, spec.writer, out.shots, out.traces, n_samples,
                       spec.sample_interval_us, spec.format),
      n_samples, spec.sample_interval_us, spec.format);
  if (absl::Status s = (*file)->Append(head); !s.ok()) return fail(IoError("writing", temp, s));
  for (const Part& p : parts) {
    // copy_file_range where the filesystem can: no bytes through user space.
    if (absl::Status s = (*file)->AppendFrom(*p.file, kFileHeaderBytes, p.size - kFileHeaderBytes);
        !s.ok()) {
      return fail(absl::IsDataLoss(s) ? absl::DataLossError(absl::StrCat(
                                            p.path, ": shorter than its stat (", s.message(), ")"))
                                      : IoError("copying into", temp, s));
    }
  }
  if (absl::Status s = (*file)->Sync(); !s.ok()) return fail(IoError("fsync of", temp, s));
  close_all();
  if (absl::Status s = (*file)->Close(); !s.ok()) return fail(IoError("close of", temp, s));
  file->reset();
  if (absl::Status s = env->RenameNoReplace(temp, out.path); !s.ok()) {
    env->Remove(temp).IgnoreError();
    if (absl::IsAlreadyExists(s)) return s;
    return IoError("rename into place of", out.path, s);
  }
  env->SyncDir(spec.dir).IgnoreError();
  RemoveTree(env, parts_dir);
  return out;
}

std::vector<std::string> RemoveParts(const std::string& dir, env::Env* env) {
  std::vector<std::string> removed;
  absl::StatusOr<std::vector<std::string>> names = env->List(dir);
  if (!names.ok()) return removed;
  for (const std::string& n : *names) {
    if (n.size() < 2 || n[0] != '.' || !absl::StrContains(n, kPartsInfix)) continue;
    const std::string path = absl::StrCat(dir, "/", n);
    if (const absl::StatusOr<env::FileStat> st = env->Stat(path); st.ok() && st->directory) {
      RemoveTree(env, path);
      removed.push_back(n);
    }
  }
  return removed;
}

}  // namespace shotstream::write
