// Test tool: EpochShots for the cases on stdin, one a line: "epoch seed world_size n
// [trace counts of ids 1..n]"; prints each rank's list, one line a rank, ids
// comma-separated. //tests:epoch_test compares it with Python's epoch_shots.
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
    int world, n;
    if (!(in >> epoch >> seed >> world >> n)) return 2;
    std::vector<int64_t> ids;
    absl::flat_hash_map<int64_t, uint64_t> counts;
    for (int i = 1; i <= n; ++i) {
      ids.push_back(i);
      uint64_t c;
      if (in >> c) counts[i] = c;
    }
    for (int r = 0; r < world; ++r) {
      auto mine = shotstream::client::EpochShots(ids, epoch, seed, r, world, counts);
      if (!mine.ok()) return std::fprintf(stderr, "%s\n", mine.status().ToString().c_str()), 1;
      std::string out;
      for (size_t k = 0; k < mine->size(); ++k) out += (k ? "," : "") + std::to_string((*mine)[k]);
      std::printf("%s\n", out.c_str());
    }
  }
  return 0;
}
