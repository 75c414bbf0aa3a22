// Fuzzes the decoding of the encodings a client decodes before any checksum is verified
// (LOSSLESS, NATIVE; and INT16, QUANTIZED: a server that checksums bad bytes): a payload
// must decode into exactly its traces or be refused, never write past them. ZFP is left
// out: its payload's CRC-32 is verified before it reaches the decoder (docs/encodings.md).
//   byte 0: encoding (0 lossless, 1 int16, 2 native, 3 quantized); byte 1: SEG-Y format
//   code (native) and byte order (bit 7); bytes 2-3: traces, samples; then the payload.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "wire/sample_encoding.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using shotstream::wire::Encoding;
  if (size < 4) return 0;
  static const Encoding kEncodings[] = {Encoding::kLossless, Encoding::kInt16, Encoding::kNative,
                                        Encoding::kQuantized};
  const Encoding e = kEncodings[data[0] % 4];
  const int format = data[1] & 0x1F;
  const bool big = (data[1] & 0x80) != 0;
  const uint32_t n_traces = data[2] % 16, n_samples = data[3];
  const size_t n = size_t{n_traces} * n_samples;
  std::vector<float> out(n + 1, 123.0f);
  const absl::Status s = shotstream::wire::DecodeSamples(e, format, big, data + 4, size - 4,
                                                         n_traces, n_samples, out.data());
  if (out[n] != 123.0f) __builtin_trap();  // wrote past the traces
  if (!s.ok() && s.code() != absl::StatusCode::kDataLoss) __builtin_trap();
  return 0;
}
