// Test-only: writes small SEG-Y files of any sample format and byte order.
#ifndef SHOTSTREAM_SERVER_SEGY_TEST_WRITER_H_
#define SHOTSTREAM_SERVER_SEGY_TEST_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "segy/sample_format.h"

namespace shotstream::segy {

struct TestTrace {
  // (1-based byte, size, value) trace header fields to set.
  struct Field {
    int byte;
    int size;
    int64_t value;
  };
  std::vector<Field> fields;
  std::vector<float> samples;  // n_samples values, encoded in the file's format
};

struct TestFileSpec {
  int format = 5;
  ByteOrder order = ByteOrder::kBigEndian;
  uint32_t n_samples = 0;
  int interval_us = 4000;
  bool write_order_word = false;  // bytes 3297-3300 = 0x01020304 in file order
  std::vector<TestTrace> traces;
};

// The bytes of the whole file.
std::vector<uint8_t> MakeSegyBytes(const TestFileSpec& spec);

// Writes MakeSegyBytes(spec) to `path`; aborts the test binary on failure.
void WriteSegyFile(const std::string& path, const TestFileSpec& spec);

// Encodes one sample of `format` in `order` (integers: the value cast to the type).
void EncodeSample(float value, int format, ByteOrder order, uint8_t* dst);

}  // namespace shotstream::segy

#endif  // SHOTSTREAM_SERVER_SEGY_TEST_WRITER_H_
