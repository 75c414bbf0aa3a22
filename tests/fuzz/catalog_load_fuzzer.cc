// Fuzzes the catalog loader. The input's CRC-32 is fixed up before loading, so that the
// fuzzer reaches the parsing behind the checksum (a real corrupt file fails the checksum).
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "server/catalog/catalog_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shotstream::catalog;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.size() >= 4) {
    const uint32_t crc = static_cast<uint32_t>(
        ::crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size() - 4));
    std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
  }
  static const std::string path = "/tmp/shotstream-fuzz-" + std::to_string(getpid()) + ".catalog";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  // The source the seed catalogs were written for (see make_seeds.py).
  CatalogSource expected;
  expected.shot_key = "field_record";
  expected.files.push_back(SourceFile{"a.sgy", 1000000, 1, 2});
  auto loaded = LoadCatalog(path, expected);
  if (loaded.ok()) {
    // Every trace of every shot is inside the catalog's columns and its file.
    for (const ShotEntry& s : loaded->shots()) {
      for (const auto& t : loaded->TracesOf(s)) {
        if (t.file_id != 0 || t.offset >= 1000000) __builtin_trap();
      }
    }
  }
  return 0;
}
