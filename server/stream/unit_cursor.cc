#include "server/stream/unit_cursor.h"

#include <algorithm>
#include <utility>

namespace shotstream::stream {

bool UnitCursor::HaveShot() {
  if (next_ < ids_.size()) return true;
  if (all_known()) return false;
  int64_t id;
  switch (plan_.feed->Next(&id)) {
    case ShotFeed::Take::kShot:
      ids_.push_back(id);
      return true;
    case ShotFeed::Take::kEnd:
      feed_ended_ = true;
      return false;
    case ShotFeed::Take::kWait:
      return false;
  }
  return false;
}

bool UnitCursor::Peek(ShotUnit* unit) {
  for (;;) {
    if (piece_ > 0) {  // within a shot read in pieces
      auto it = heads_.find(next_);
      // No head: its first piece (and head) is still being read, or the shot was sent to
      // its end and its head dropped.
      if (it == heads_.end() && next_ >= shots_sent_) return false;
      if (it != heads_.end() && piece_ < it->second->n_pieces()) {
        const dataset::ShotHead& head = *it->second;
        unit->index = next_;
        unit->piece = piece_;
        unit->pieced = true;
        unit->bytes = uint64_t{head.piece_traces(piece_)} * head.n_samples * sizeof(float);
        unit->head = it->second;
        return true;
      }
      ++next_;  // every piece of it submitted: the next shot
      piece_ = 0;
      continue;
    }
    if (!HaveShot()) return false;
    const uint64_t bytes = plan_.source->ShotBytes(ids_[next_], plan_.shot.read.selection.count);
    unit->index = next_;
    unit->piece = 0;
    unit->pieced = plan_.piece_bytes > 0 && bytes > plan_.piece_bytes;
    unit->bytes = unit->pieced ? plan_.piece_bytes : bytes;
    unit->head.reset();
    return true;
  }
}

void UnitCursor::Advance(const ShotUnit& unit) {
  if (unit.pieced) {
    piece_ = unit.piece + 1;
  } else {
    next_ = unit.index + 1;
    piece_ = 0;
  }
}

void UnitCursor::HeadRead(size_t index, std::shared_ptr<const dataset::ShotHead> head) {
  heads_[index] = std::move(head);
}

void UnitCursor::ShotSent(size_t index) {
  ++shots_sent_;
  heads_.erase(index);
}

std::vector<int64_t> UnitCursor::Rewind() {
  for (auto it = heads_.begin(); it != heads_.end();) {
    const bool again = it->first > next_ || (it->first == next_ && piece_ == 0);
    if (again) {
      heads_.erase(it++);
    } else {
      ++it;
    }
  }
  std::vector<int64_t> fed_back;
  if (plan_.feed != nullptr) {
    // A job's shots go back to the job (any consumer may take them), and this stream's
    // later positions are taken afresh from the feed; a shot partly sent stays.
    const size_t ours = std::min(piece_ > 0 ? next_ + 1 : next_, ids_.size());
    fed_back.assign(ids_.begin() + ours, ids_.end());
    ids_.resize(ours);
  }
  return fed_back;
}

std::vector<int64_t> UnitCursor::ids(size_t first, size_t count) const {
  if (first >= ids_.size()) return {};
  return std::vector<int64_t>(ids_.begin() + first,
                              ids_.begin() + first + std::min(count, ids_.size() - first));
}

}  // namespace shotstream::stream
