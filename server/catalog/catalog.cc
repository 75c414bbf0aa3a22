#include "server/catalog/catalog.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shotstream::catalog {
namespace {

// The builder's log, one 32-bit word at a time, in the order traces were added:
//   w < kRun              one trace of shot ordinal w, at the cursor (which moves on by 1)
//   kRun, ordinal, count  `count` traces of the shot from the cursor
//   kSeek, file, lo, hi   the cursor moves to trace index hi:lo of file `file`
constexpr uint32_t kRun = 0x80000001u;
constexpr uint32_t kSeek = 0x80000002u;
constexpr uint32_t kMaxCount = 0x7fffffffu;  // traces in one segment
constexpr uint64_t kMaxListIndex = UINT32_MAX;
constexpr uint32_t kMaxListGroup = 4;  // consecutive traces appended to a list, not a new run

// Where a shot's segments stand while the log is replayed: the last segment's file,
// its kind and count, and the trace index after its last trace.
struct SegmentState {
  uint64_t next = 0;
  uint32_t file = 0;
  uint32_t count = 0;  // traces in the last segment; 0: none yet
  bool list = false;
};

// Places traces [first, first + count) of `file` after a shot's earlier ones: extends its
// last segment where they follow it, appends to a list where a few stray traces join it
// (a run of one becoming a list), else opens a run. `out` counts (first pass) or writes
// (second pass); both passes make the same decisions.
template <typename Out>
void Place(SegmentState& s, uint32_t file, uint64_t first, uint64_t count, Out& out) {
  while (count > 0) {
    const bool same_file = s.count > 0 && s.file == file;
    if (same_file && !s.list && first == s.next && s.count < kMaxCount) {
      const uint64_t n = std::min<uint64_t>(count, kMaxCount - s.count);
      out.Extend(n);
      s.count += static_cast<uint32_t>(n);
      s.next += n;
      first += n;
      count -= n;
      continue;
    }
    if (same_file && count < kMaxListGroup && first + count - 1 <= kMaxListIndex &&
        s.count < kMaxCount - kMaxListGroup &&
        (s.list || (s.count == 1 && s.next - 1 <= kMaxListIndex))) {
      if (!s.list) {
        out.ToList(static_cast<uint32_t>(s.next - 1));
        s.list = true;
      }
      for (uint64_t k = 0; k < count; ++k) out.Append(static_cast<uint32_t>(first + k));
      s.count += static_cast<uint32_t>(count);
      s.next = first + count;
      return;
    }
    const uint64_t n = std::min<uint64_t>(count, kMaxCount);
    out.NewRun(file, first, static_cast<uint32_t>(n));
    s = SegmentState{first + n, file, static_cast<uint32_t>(n), false};
    first += n;
    count -= n;
  }
}

// Replays the log: each(ordinal, file, first trace index, count).
template <typename Each>
void Replay(const std::vector<uint32_t>& log, Each each) {
  uint32_t file = 0;
  uint64_t next = 0;
  for (size_t i = 0; i < log.size();) {
    const uint32_t w = log[i];
    if (w < kRun) {
      each(w, file, next, 1);
      ++next;
      ++i;
    } else if (w == kRun) {
      each(log[i + 1], file, next, log[i + 2]);
      next += log[i + 2];
      i += 3;
    } else {
      file = log[i + 1];
      next = log[i + 2] | (uint64_t{log[i + 3]} << 32);
      i += 4;
    }
  }
}

}  // namespace

const ShotEntry* Catalog::Find(int64_t shot_id) const {
  auto it = std::lower_bound(shots_.begin(), shots_.end(), shot_id,
                             [](const ShotEntry& s, int64_t id) { return s.shot_id < id; });
  return it != shots_.end() && it->shot_id == shot_id ? &*it : nullptr;
}

std::vector<io::TraceRef> Catalog::TracesOf(const ShotEntry& shot) const {
  std::vector<io::TraceRef> out;
  out.reserve(shot.n_traces);
  for (uint64_t s = shot.first_segment; s < shot.first_segment + shot.n_segments; ++s) {
    const Segment& seg = segments_[s];
    const FileGeometry& g = files_[seg.file_id];
    const uint32_t n = seg.count();
    if (seg.is_list()) {
      for (uint32_t k = 0; k < n; ++k) {
        out.push_back({seg.file_id, g.first_offset + list_[seg.first + k] * g.stride});
      }
    } else {
      for (uint32_t k = 0; k < n; ++k) {
        out.push_back({seg.file_id, g.first_offset + (seg.first + k) * g.stride});
      }
    }
  }
  return out;
}

std::vector<io::TraceRef> Catalog::AllTraces() const {
  std::vector<io::TraceRef> all;
  all.reserve(n_traces_);
  for (const ShotEntry& s : shots_) {
    std::vector<io::TraceRef> t = TracesOf(s);
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

uint64_t Catalog::ResidentBytes() const {
  return shots_.capacity() * sizeof(ShotEntry) + segments_.capacity() * sizeof(Segment) +
         list_.capacity() * sizeof(uint32_t) + files_.capacity() * sizeof(FileGeometry) +
         positions_.capacity() * sizeof(SourcePosition);
}

absl::StatusOr<Catalog> Catalog::FromParts(std::vector<ShotEntry> shots,
                                           std::vector<Segment> segments,
                                           std::vector<uint32_t> list,
                                           std::vector<FileGeometry> files,
                                           std::vector<SourcePosition> positions) {
  Catalog c;
  for (const FileGeometry& g : files) {
    if (g.stride == 0) return absl::InvalidArgumentError("a file's trace stride is 0");
  }
  uint64_t segment = 0;
  for (size_t i = 0; i < shots.size(); ++i) {
    const ShotEntry& s = shots[i];
    if (i > 0 && s.shot_id <= shots[i - 1].shot_id) {
      return absl::InvalidArgumentError(absl::StrCat("shot ", s.shot_id, " is out of order"));
    }
    if (s.first_segment != segment || s.n_segments > segments.size() - segment) {
      return absl::InvalidArgumentError(
          absl::StrCat("shot ", s.shot_id, "'s segments do not follow the shot before"));
    }
    uint64_t traces = 0;
    for (uint64_t k = segment; k < segment + s.n_segments; ++k) {
      const Segment& seg = segments[k];
      if (seg.file_id >= files.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("shot ", s.shot_id, " refers to file id ", seg.file_id, " of ",
                         files.size()));
      }
      if (seg.is_list() && (seg.first > list.size() || seg.count() > list.size() - seg.first)) {
        return absl::InvalidArgumentError(
            absl::StrCat("shot ", s.shot_id, "'s trace list is outside the list column"));
      }
      traces += seg.count();
    }
    if (traces != s.n_traces) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shot ", s.shot_id, " has ", s.n_traces, " traces but its segments hold ", traces));
    }
    segment += s.n_segments;
    c.n_traces_ += traces;
  }
  if (segment != segments.size()) {
    return absl::InvalidArgumentError("segments left over after the last shot");
  }
  c.shots_ = std::move(shots);
  c.segments_ = std::move(segments);
  c.list_ = std::move(list);
  c.files_ = std::move(files);
  c.positions_ = std::move(positions);
  return c;
}

CatalogBuilder::CatalogBuilder(std::vector<FileGeometry> files) : files_(std::move(files)) {}

uint32_t CatalogBuilder::OrdinalOf(int64_t shot_id) {
  auto [it, added] = ordinals_.try_emplace(shot_id, static_cast<uint32_t>(ids_.size()));
  if (added) ids_.push_back(shot_id);
  return it->second;
}

void CatalogBuilder::Add(int64_t shot_id, uint32_t file_id, uint64_t first, uint64_t count) {
  if (count == 0) return;
  const uint32_t ordinal = OrdinalOf(shot_id);
  if (file_id != file_ || first != next_) {
    log_.insert(log_.end(), {kSeek, file_id, static_cast<uint32_t>(first),
                             static_cast<uint32_t>(first >> 32)});
  }
  file_ = file_id;
  next_ = first + count;
  n_traces_ += count;
  if (count == 1 && ordinal < kRun) {
    log_.push_back(ordinal);
    return;
  }
  while (count > 0) {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(count, UINT32_MAX));
    log_.insert(log_.end(), {kRun, ordinal, n});
    count -= n;
  }
}

Catalog CatalogBuilder::Finish(std::vector<SourcePosition> positions) && {
  const size_t n_shots = ids_.size();
  ordinals_ = {};
  // First pass: each shot's traces, segments and list entries.
  struct Totals {
    uint64_t traces = 0;
    uint64_t segments = 0;
    uint64_t list = 0;
  };
  struct Counter {
    Totals* t;
    void Extend(uint64_t) {}
    void ToList(uint32_t) { ++t->list; }
    void Append(uint32_t) { ++t->list; }
    void NewRun(uint32_t, uint64_t, uint32_t) { ++t->segments; }
  };
  std::vector<SegmentState> state(n_shots);
  std::vector<Totals> totals(n_shots);
  Replay(log_, [&](uint32_t o, uint32_t file, uint64_t first, uint64_t count) {
    Counter c{&totals[o]};
    totals[o].traces += count;
    Place(state[o], file, first, count, c);
  });

  // Shots sorted by id; their segments and lists laid out in that order.
  std::vector<uint32_t> order(n_shots);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ids_[a] < ids_[b]; });
  Catalog c;
  c.shots_.resize(n_shots);
  struct Cursor {
    uint64_t segment = 0;
    uint64_t list = 0;
  };
  std::vector<Cursor> cursor(n_shots);
  uint64_t segments = 0, list = 0;
  for (size_t r = 0; r < n_shots; ++r) {
    const uint32_t o = order[r];
    c.shots_[r] = ShotEntry{ids_[o], segments, static_cast<uint32_t>(totals[o].traces),
                            static_cast<uint32_t>(totals[o].segments)};
    cursor[o] = Cursor{segments, list};
    segments += totals[o].segments;
    list += totals[o].list;
  }
  totals = {};
  order = {};
  ids_ = {};
  c.segments_.resize(segments);
  c.list_.resize(list);

  // Second pass: the same decisions, written.
  struct Writer {
    Catalog* c;
    Cursor* at;
    void Extend(uint64_t n) {
      c->segments_[at->segment - 1].count_and_kind += static_cast<uint32_t>(n);
    }
    void ToList(uint32_t index) {
      Segment& s = c->segments_[at->segment - 1];
      s.first = at->list;
      s.count_and_kind = 1 | Segment::kList;
      c->list_[at->list++] = index;
    }
    void Append(uint32_t index) {
      ++c->segments_[at->segment - 1].count_and_kind;
      c->list_[at->list++] = index;
    }
    void NewRun(uint32_t file, uint64_t first, uint32_t n) {
      c->segments_[at->segment++] = Segment{first, file, n};
    }
  };
  std::fill(state.begin(), state.end(), SegmentState());
  Replay(log_, [&](uint32_t o, uint32_t file, uint64_t first, uint64_t count) {
    Writer w{&c, &cursor[o]};
    Place(state[o], file, first, count, w);
  });
  log_ = {};
  c.files_ = std::move(files_);
  c.positions_ = std::move(positions);
  c.n_traces_ = n_traces_;
  return c;
}

}  // namespace shotstream::catalog
