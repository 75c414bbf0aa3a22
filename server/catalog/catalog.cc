#include "server/catalog/catalog.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shotstream::catalog {
namespace {

// The builder's log, in the order traces were added, in words of W bits (16 while every
// shot ordinal fits in 15 bits, so that a scattered file costs 2 bytes a trace; then 32):
//   w < kTop                     one trace of shot ordinal w at the cursor (which moves on)
//   kRun, ordinal:32, count:32   `count` traces of the shot from the cursor
//   kSeek, file:32, index:64     the cursor moves to trace `index` of file `file`
// (a field of N bits takes N / W words, least significant first).
template <typename W>
struct Log {
  static constexpr W kTop = static_cast<W>(W{1} << (sizeof(W) * 8 - 1));
  static constexpr W kRun = kTop | 1;
  static constexpr W kSeek = kTop | 2;
  static void Put(std::vector<W>* log, uint64_t v, int bits) {
    for (int b = 0; b < bits; b += sizeof(W) * 8) log->push_back(static_cast<W>(v >> b));
  }
  static uint64_t Get(const std::vector<W>& log, size_t* i, int bits) {
    uint64_t v = 0;
    for (int b = 0; b < bits; b += sizeof(W) * 8) v |= uint64_t{log[(*i)++]} << b;
    return v;
  }
  // Appends `count` traces of shot `ordinal` from trace `first` of `file`, after a seek
  // when they do not start at the cursor.
  static void Add(std::vector<W>* log, uint32_t ordinal, uint32_t file, uint64_t first,
                  uint64_t count, bool seek) {
    if (seek) {
      log->push_back(kSeek);
      Put(log, file, 32);
      Put(log, first, 64);
    }
    if (count == 1 && ordinal < kTop) {
      log->push_back(static_cast<W>(ordinal));
      return;
    }
    while (count > 0) {
      const uint64_t n = std::min<uint64_t>(count, UINT32_MAX);
      log->push_back(kRun);
      Put(log, ordinal, 32);
      Put(log, n, 32);
      count -= n;
    }
  }
};

constexpr uint32_t kMaxCount = 0x7fffffffu;  // traces in one segment
constexpr uint64_t kMaxListIndex = UINT32_MAX;
constexpr uint32_t kMaxListGroup = 4;  // consecutive traces appended to a list, not a new run

// Where a shot's segments stand while the log is replayed: the last segment's file,
// its kind and count, and the trace index after its last trace.
// 16 bytes a shot.
struct SegmentState {
  uint64_t next = 0;
  uint32_t file = 0;
  uint32_t count : 31;  // traces in the last segment; 0: none yet
  uint32_t list : 1;
  SegmentState() : count(0), list(0) {}
  SegmentState(uint64_t n, uint32_t f, uint32_t c, bool l) : next(n), file(f), count(c), list(l) {}
};
static_assert(sizeof(SegmentState) == 16);

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

// Replays the log: each(ordinal, file, first trace index, count, seek: whether the cursor
// moved there).
template <typename W, typename Each>
void Replay(const std::vector<W>& log, Each each) {
  using L = Log<W>;
  uint32_t file = 0;
  uint64_t next = 0;
  bool seek = false;
  for (size_t i = 0; i < log.size();) {
    const W w = log[i];
    if (w < L::kTop) {
      each(static_cast<uint32_t>(w), file, next, uint64_t{1}, seek);
      ++next;
      ++i;
    } else if (w == L::kRun) {
      ++i;
      const uint32_t ordinal = static_cast<uint32_t>(L::Get(log, &i, 32));
      const uint64_t count = L::Get(log, &i, 32);
      each(ordinal, file, next, count, seek);
      next += count;
    } else {
      ++i;
      file = static_cast<uint32_t>(L::Get(log, &i, 32));
      next = L::Get(log, &i, 64);
      seek = true;
      continue;
    }
    seek = false;
  }
}

}  // namespace

const ShotEntry* Catalog::Find(int64_t shot_id) const {
  auto it = std::lower_bound(shots_.begin(), shots_.end(), shot_id,
                             [](const ShotEntry& s, int64_t id) { return s.shot_id < id; });
  return it != shots_.end() && it->shot_id == shot_id ? &*it : nullptr;
}

std::vector<io::TraceRef> Catalog::TracesOf(const ShotEntry& shot) const {
  const absl::Span<const uint32_t> list = list_.span();
  std::vector<io::TraceRef> out;
  out.reserve(shot.n_traces);
  for (uint64_t s = shot.first_segment; s < shot.first_segment + shot.n_segments; ++s) {
    const Segment& seg = segments_[s];
    const FileGeometry& g = files_[seg.file_id];
    const uint32_t n = seg.count();
    if (seg.is_list()) {
      for (uint32_t k = 0; k < n; ++k) {
        out.push_back({seg.file_id, g.first_offset + uint64_t{list[seg.first + k]} * g.stride});
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
         list_.held_bytes() + files_.capacity() * sizeof(FileGeometry) +
         positions_.capacity() * sizeof(SourcePosition);
}

absl::StatusOr<Catalog> Catalog::FromParts(std::vector<ShotEntry> shots,
                                           std::vector<Segment> segments,
                                           TraceList list,
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

void CatalogBuilder::Reserve(uint64_t traces) {
  reserve_ = traces;
  if (wide_) {
    wide_log_.reserve(traces + 16);
  } else {
    narrow_log_.reserve(traces + 16);
  }
}

void CatalogBuilder::Add(int64_t shot_id, uint32_t file_id, uint64_t first, uint64_t count) {
  if (count == 0) return;
  const uint32_t ordinal = OrdinalOf(shot_id);
  const bool seek = file_id != file_ || first != next_;
  file_ = file_id;
  next_ = first + count;
  n_traces_ += count;
  if (!wide_ && ordinal >= Log<uint16_t>::kTop) {
    // An ordinal beyond 15 bits: the log goes on in 32-bit words, the 16-bit ones
    // rewritten once.
    wide_log_.reserve(std::max<uint64_t>(reserve_ + 16, narrow_log_.size() + 16));
    Replay(narrow_log_, [&](uint32_t o, uint32_t f, uint64_t at, uint64_t n, bool moved) {
      Log<uint32_t>::Add(&wide_log_, o, f, at, n, moved);
    });
    narrow_log_ = {};
    wide_ = true;
  }
  if (wide_) {
    Log<uint32_t>::Add(&wide_log_, ordinal, file_id, first, count, seek);
  } else {
    Log<uint16_t>::Add(&narrow_log_, ordinal, file_id, first, count, seek);
  }
}

Catalog CatalogBuilder::Finish(std::vector<SourcePosition> positions) && {
  const size_t n_shots = ids_.size();
  ordinals_ = {};
  // First pass: each shot's traces, segments and list entries (counted in `at`, which
  // then becomes where each shot's segments and list entries go).
  struct Cursor {
    uint64_t segment = 0;
    uint64_t list = 0;
  };
  struct Counter {
    Cursor* t;
    void Extend(uint64_t) {}
    void ToList(uint32_t) { ++t->list; }
    void Append(uint32_t) { ++t->list; }
    void NewRun(uint32_t, uint64_t, uint32_t) { ++t->segment; }
  };
  std::vector<SegmentState> state(n_shots);
  std::vector<Cursor> at(n_shots);
  std::vector<uint32_t> traces(n_shots);
  auto replay = [&](auto each) {
    if (wide_) {
      Replay(wide_log_, each);
    } else {
      Replay(narrow_log_, each);
    }
  };
  replay([&](uint32_t o, uint32_t file, uint64_t first, uint64_t count, bool) {
    Counter c{&at[o]};
    traces[o] += static_cast<uint32_t>(count);
    Place(state[o], file, first, count, c);
  });
  state = {};  // the second pass reads each shot's state from what it has written

  // Shots sorted by id; their segments and lists laid out in that order.
  std::vector<uint32_t> order(n_shots);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ids_[a] < ids_[b]; });
  Catalog c;
  c.shots_.resize(n_shots);
  uint64_t segments = 0, list = 0;
  for (size_t r = 0; r < n_shots; ++r) {
    const uint32_t o = order[r];
    c.shots_[r] = ShotEntry{ids_[o], segments, traces[o], static_cast<uint32_t>(at[o].segment)};
    const Cursor counted = at[o];
    at[o] = Cursor{segments, list};
    segments += counted.segment;
    list += counted.list;
  }
  traces = {};
  order = {};
  ids_ = {};
  c.segments_.resize(segments);
  c.list_.held().resize(list);

  // Second pass: the same decisions, written. A shot's placement state is its last
  // segment as written (kStarted in its cursor once it has one), so none is kept.
  constexpr uint64_t kStarted = uint64_t{1} << 63;
  struct Writer {
    Catalog* c;
    Cursor* at;
    Segment& last() { return c->segments_[(at->segment & ~kStarted) - 1]; }
    void Extend(uint64_t n) { last().count_and_kind += static_cast<uint32_t>(n); }
    void ToList(uint32_t index) {
      Segment& s = last();
      s.first = at->list;
      s.count_and_kind = 1 | Segment::kList;
      c->list_.held()[at->list++] = index;
    }
    void Append(uint32_t index) {
      ++last().count_and_kind;
      c->list_.held()[at->list++] = index;
    }
    void NewRun(uint32_t file, uint64_t first, uint32_t n) {
      c->segments_[at->segment & ~kStarted] = Segment{first, file, n};
      at->segment = ((at->segment & ~kStarted) + 1) | kStarted;
    }
    SegmentState State() {
      if ((at->segment & kStarted) == 0) return SegmentState();
      const Segment& s = last();
      const uint64_t next =
          s.is_list() ? uint64_t{c->list_.held()[at->list - 1]} + 1 : s.first + s.count();
      return SegmentState(next, s.file_id, s.count(), s.is_list());
    }
  };
  replay([&](uint32_t o, uint32_t file, uint64_t first, uint64_t count, bool) {
    Writer w{&c, &at[o]};
    SegmentState s = w.State();
    Place(s, file, first, count, w);
  });
  narrow_log_ = {};
  wide_log_ = {};
  c.files_ = std::move(files_);
  c.positions_ = std::move(positions);
  c.n_traces_ = n_traces_;
  return c;
}

}  // namespace shotstream::catalog
