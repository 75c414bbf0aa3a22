// Test tool: EpochRemainder for the cases on stdin, one a line:
//   "epoch seed world_size n even n_checkpoints {ckpt_world_size n_counts counts...}*
//    [trace counts of ids 1..n]"
// (even: 0 none, 1 pad, 2 drop; no checkpoint: EpochShots). Prints each rank's list, one
// line a rank, ids comma-separated, or "error: ..." once for the case. //tests:epoch_test
// compares it with Python's epoch_shots and epoch_remainder.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "shotstream/client/epoch_shots.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    uint64_t epoch, seed;
    int world, n, even, n_ckpt;
    if (!(in >> epoch >> seed >> world >> n >> even >> n_ckpt)) return 2;
    std::vector<shotstream::client::EpochProgress> progress(n_ckpt);
    for (auto& p : progress) {
      int k;
      if (!(in >> p.world_size >> k)) return 2;
      p.consumed.resize(k);
      for (auto& c : p.consumed) in >> c;
    }
    std::vector<int64_t> ids;
    absl::flat_hash_map<int64_t, uint64_t> counts;
    for (int i = 1; i <= n; ++i) {
      ids.push_back(i);
      uint64_t c;
      if (in >> c) counts[i] = c;
    }
    for (int r = 0; r < world; ++r) {
      auto mine = shotstream::client::EpochRemainder(
          ids, epoch, seed, progress, r, world, counts,
          static_cast<shotstream::client::EvenShares>(even));
      if (!mine.ok()) {
        std::printf("error: %s\n", std::string(mine.status().message()).c_str());
        break;
      }
      std::string out;
      for (size_t k = 0; k < mine->size(); ++k) out += (k ? "," : "") + std::to_string((*mine)[k]);
      std::printf("%s\n", out.c_str());
    }
  }
  return 0;
}
