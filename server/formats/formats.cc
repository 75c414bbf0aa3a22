#include "server/formats/formats.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/hdf5/hdf5_source.h"
#include "server/npy/npy_source.h"
#include "server/segy/segy_source.h"
#include "server/zarr/zarr_source.h"

namespace shotstream::source {
namespace {

// Up to 512 bytes of the file at `path` (none for a directory or a file that cannot be
// read: its format's open says why).
std::vector<uint8_t> Head(const std::string& path) {
  std::vector<uint8_t> head(512);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return {};
  head.resize(std::fread(head.data(), 1, head.size(), f));
  std::fclose(f);
  return head;
}

}  // namespace

const std::vector<const Format*>& Formats() {
  static const auto* formats = new std::vector<const Format*>{
      &npy::NpyFormat(),
      &hdf5::Hdf5Format(),
      &zarr::ZarrFormat(),
      &segy::SegyFormat(),  // last: SEG-Y takes what no other format claims
  };
  return *formats;
}

std::string FormatNames() {
  std::vector<std::string> names = {"auto"};
  for (const Format* f : Formats()) names.emplace_back(f->name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<const Format*> FindFormat(absl::string_view name) {
  if (name == "auto") return nullptr;
  for (const Format* f : Formats()) {
    if (f->name == name) return f;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("format: '", name, "' (expected ", FormatNames(), ")"));
}

const Format& DetectFormat(const std::string& path) {
  const std::vector<uint8_t> head = Head(path);
  for (const Format* f : Formats()) {
    if (f->claims(path, head)) return *f;
  }
  return *Formats().back();
}

const Format& SuggestedFormat(const std::vector<std::string>& patterns) {
  const Format* suggested = nullptr;
  for (const std::string& p : patterns) {
    const Format* mine = nullptr;
    for (const Format* f : Formats()) {
      if (f->suggested_by(p)) {
        mine = f;
        break;
      }
    }
    if (mine == nullptr || (suggested != nullptr && suggested != mine)) return *Formats().back();
    suggested = mine;
  }
  return suggested != nullptr ? *suggested : *Formats().back();
}

absl::StatusOr<std::unique_ptr<Source>> OpenSource(const Format* format, const SourceSpec& spec) {
  if (format == nullptr) {
    format = &DetectFormat(spec.paths.front());
    for (const std::string& path : spec.paths) {
      const Format& other = DetectFormat(path);
      if (&other != format) {
        return absl::InvalidArgumentError(absl::StrCat(
            "dataset '", spec.dataset, "': ", path, " is ", other.name, " but ",
            spec.paths.front(), " is ", format->name, "; a dataset's files are of one format"));
      }
    }
  }
  absl::StatusOr<std::unique_ptr<Source>> source = format->open(spec);
  if (!source.ok()) {
    return absl::Status(source.status().code(), absl::StrCat("dataset '", spec.dataset, "': ",
                                                             source.status().message()));
  }
  return source;
}

}  // namespace shotstream::source
