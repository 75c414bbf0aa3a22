#include "server/catalog/catalog.h"

#include <algorithm>
#include <utility>

namespace shotstream::catalog {

Catalog Catalog::FromColumns(std::vector<ShotEntry> shots, std::vector<io::TraceRef> traces,
                             std::vector<SourcePosition> positions) {
  Catalog c;
  c.positions_ = std::move(positions);
  c.shots_ = std::move(shots);
  c.traces_ = std::move(traces);
  return c;
}

const ShotEntry* Catalog::Find(int64_t shot_id) const {
  auto it = std::lower_bound(shots_.begin(), shots_.end(), shot_id,
                             [](const ShotEntry& s, int64_t id) { return s.shot_id < id; });
  return it != shots_.end() && it->shot_id == shot_id ? &*it : nullptr;
}

}  // namespace shotstream::catalog
