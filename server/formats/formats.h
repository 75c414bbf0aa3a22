// The file formats the server reads: each one's Format (server/source/source.h), listed
// once in formats.cc. A new format is a package and one line there.
//
// Thread-safe: the list is fixed at the first call.
#ifndef SHOTSTREAM_SERVER_FORMATS_FORMATS_H_
#define SHOTSTREAM_SERVER_FORMATS_FORMATS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/source/source.h"

namespace shotstream::source {

// Every format, in the order `auto` asks them (SEG-Y last: it takes what no other claims).
const std::vector<const Format*>& Formats();

// "auto, segy, npy, hdf5, ...": what a `format:` setting may say.
std::string FormatNames();

// The format named `name` ("auto": null); INVALID_ARGUMENT naming the known ones.
absl::StatusOr<const Format*> FindFormat(absl::string_view name);

// The format of the file at `path` under `format: auto`: the first that claims it.
const Format& DetectFormat(const std::string& path);

// The format a configuration's file patterns suggest under `format: auto` (the one every
// pattern suggests; SEG-Y when they suggest none or several), for checking its shot key
// before any file is opened.
const Format& SuggestedFormat(const std::vector<std::string>& patterns);

// Opens `spec.paths` (every one of one format: `format`, or under auto as detected) as a
// source. Errors name the dataset, the file and the reason.
absl::StatusOr<std::unique_ptr<Source>> OpenSource(const Format* format, const SourceSpec& spec);

}  // namespace shotstream::source

#endif  // SHOTSTREAM_SERVER_FORMATS_FORMATS_H_
