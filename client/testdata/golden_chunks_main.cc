// Writes the golden chunk stream: golden_chunks_main OUT.bin OUT.txt (see golden_chunks.h).
//   bazel run //client:golden_chunks -- $PWD/client/testdata/golden_chunks.bin \
//       $PWD/client/testdata/golden_chunks.txt
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "client/testdata/golden_chunks.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s OUT.bin OUT.txt\n", argv[0]);
    return 2;
  }
  auto chunks = shotstream::golden::MakeGoldenChunks();
  if (!chunks.ok()) {
    std::fprintf(stderr, "%s\n", std::string(chunks.status().message()).c_str());
    return 1;
  }
  std::ofstream bin(argv[1], std::ios::binary);
  for (const std::string& c : *chunks) {
    const uint32_t n = static_cast<uint32_t>(c.size());
    const char len[4] = {static_cast<char>(n), static_cast<char>(n >> 8),
                         static_cast<char>(n >> 16), static_cast<char>(n >> 24)};
    bin.write(len, 4);
    bin.write(c.data(), static_cast<std::streamsize>(c.size()));
  }
  std::ofstream txt(argv[2]);
  txt << shotstream::golden::GoldenShotList();
  return bin && txt ? 0 : 1;
}
