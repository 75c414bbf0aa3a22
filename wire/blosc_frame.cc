#include "wire/blosc_frame.h"

#include <blosc.h>
#include <lz4.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/thread_scratch.h"
#include "wire/sample_kernels.h"

namespace shotstream::wire {
namespace {

// The frame's 16-byte header (c-blosc's README_CHUNK_FORMAT): version 2, the compressor's
// format version, flags, typesize, then nbytes, blocksize and cbytes, little-endian.
constexpr size_t kHeader = 16;
constexpr uint8_t kVersion = 2;
constexpr uint8_t kLz4Version = 1;
constexpr uint8_t kByteShuffle = 0x01, kMemcpyed = 0x02, kBitShuffle = 0x04, kReserved = 0x08,
                  kDontSplit = 0x10;
constexpr int kLz4Code = 1;  // flags >> 5
constexpr size_t kTypesize = 4;
// 126 KiB blocks: a block, its shuffled copy and its LZ4 stream stay in L2 on either side
// (LZ4's window is 64 KiB, so larger blocks would hardly shrink the frame). A block's 32 bit
// rows are 4032 bytes apart, 63 cache lines: at 4096 (128 KiB blocks) the shuffle's 32
// streams fell in one L1 set and the unshuffle ran at under half its speed.
constexpr size_t kBlockBytes = 32 * 63 * 64;
// c-blosc's rule for the streams of a block it did not mark kDontSplit (blosc_d).
constexpr size_t kMaxSplits = 16, kMinBufferSize = 128;

void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint32_t Get32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// This thread's scratch: a shuffled block.
struct ShuffledBlock;
uint8_t* Scratch(size_t bytes) { return ThreadScratch<ShuffledBlock>(bytes); }

// c-blosc shuffles a block only when it holds a whole number of 8 elements; otherwise
// (the last block of an odd count) its bytes go as they are.
bool Shuffled(size_t block_bytes) { return (block_bytes / kTypesize) % 8 == 0; }

void WriteHeader(uint8_t flags, size_t nbytes, size_t blocksize, uint8_t* out) {
  out[0] = kVersion;
  out[1] = kLz4Version;
  out[2] = flags;
  out[3] = kTypesize;
  Put32(out + 4, static_cast<uint32_t>(nbytes));
  Put32(out + 8, static_cast<uint32_t>(blocksize));
}

size_t WriteCopy(const uint8_t* src, size_t nbytes, size_t blocksize, uint8_t* out) {
  WriteHeader(kBitShuffle | kMemcpyed | kDontSplit | kLz4Code << 5, nbytes, blocksize, out);
  std::memcpy(out + kHeader, src, nbytes);
  Put32(out + 12, static_cast<uint32_t>(kHeader + nbytes));
  return kHeader + nbytes;
}

absl::Status Corrupt(const std::string& why) {
  return absl::DataLossError(absl::StrCat("lossless chunk: ", why));
}

}  // namespace

size_t WriteBloscFrame(const float* samples, size_t n, int lz4_acceleration, uint8_t* out) {
  const auto* src = reinterpret_cast<const uint8_t*>(samples);
  const size_t nbytes = n * kTypesize;
  if (nbytes == 0) return WriteCopy(src, 0, 0, out);
  const size_t blocksize = std::min(kBlockBytes, nbytes);
  const size_t nblocks = (nbytes + blocksize - 1) / blocksize;
  const size_t cap = BloscFrameBound(nbytes);
  size_t pos = kHeader + 4 * nblocks;
  if (pos >= cap) return WriteCopy(src, nbytes, blocksize, out);
  WriteHeader(kBitShuffle | kDontSplit | kLz4Code << 5, nbytes, blocksize, out);
  uint8_t* shuffled = Scratch(blocksize);
  thread_local LZ4_stream_t lz4_state;
  for (size_t b = 0; b < nblocks; ++b) {
    const size_t bsize = std::min(blocksize, nbytes - b * blocksize);
    const uint8_t* block = src + b * blocksize;
    Put32(out + kHeader + 4 * b, static_cast<uint32_t>(pos));
    if (Shuffled(bsize)) {
      kernels::BitShuffle4(block, bsize / kTypesize, shuffled);
    } else {
      std::memcpy(shuffled, block, bsize);
    }
    // A stream LZ4 cannot shrink goes as it is, flagged by its size (c-blosc's rule); a
    // frame that would outgrow the bound goes as a plain copy.
    if (pos + 4 >= cap) return WriteCopy(src, nbytes, blocksize, out);
    const size_t room = std::min(bsize - 1, cap - pos - 4);
    const int packed = room == 0 ? 0
                                 : LZ4_compress_fast_extState(
                                       &lz4_state, reinterpret_cast<const char*>(shuffled),
                                       reinterpret_cast<char*>(out + pos + 4),
                                       static_cast<int>(bsize), static_cast<int>(room),
                                       lz4_acceleration);
    size_t csize = static_cast<size_t>(packed);
    if (packed <= 0) {
      if (pos + 4 + bsize > cap) return WriteCopy(src, nbytes, blocksize, out);
      std::memcpy(out + pos + 4, shuffled, bsize);
      csize = bsize;
    }
    Put32(out + pos, static_cast<uint32_t>(csize));
    pos += 4 + csize;
  }
  Put32(out + 12, static_cast<uint32_t>(pos));
  return pos;
}

absl::Status ReadBloscFrame(const uint8_t* frame, size_t size, size_t n, float* dst) {
  if (size < kHeader) return Corrupt("shorter than a blosc header");
  const size_t nbytes = Get32(frame + 4), blocksize = Get32(frame + 8), cbytes = Get32(frame + 12);
  if (nbytes != n * kTypesize || cbytes != size) {
    return Corrupt(absl::StrCat("blosc frame of ", cbytes, " bytes holding ", nbytes, " where ",
                                size, " holding ", n * kTypesize, " were sent"));
  }
  if (n == 0) return absl::OkStatus();
  const uint8_t flags = frame[2];
  auto* out = reinterpret_cast<uint8_t*>(dst);
  const bool ours = frame[0] == kVersion && frame[1] == kLz4Version && frame[3] == kTypesize &&
                    (flags >> 5) == kLz4Code && (flags & (kByteShuffle | kReserved)) == 0 &&
                    blocksize > 0 && blocksize <= nbytes && blocksize % kTypesize == 0;
  if (!ours) {
    const int got = blosc_decompress_ctx(frame, dst, nbytes, 1);
    if (got != static_cast<int>(nbytes)) {
      return Corrupt(absl::StrCat("blosc_decompress_ctx returned ", got));
    }
    return absl::OkStatus();
  }
  if (flags & kMemcpyed) {
    if (size != kHeader + nbytes) {
      return Corrupt(absl::StrCat("a plain copy of ", size, " bytes for ", nbytes));
    }
    std::memcpy(out, frame + kHeader, nbytes);
    return absl::OkStatus();
  }
  const size_t nblocks = (nbytes + blocksize - 1) / blocksize;
  if (nblocks > (size - kHeader) / 4) {
    return Corrupt(absl::StrCat(nblocks, " block starts in ", size, " bytes"));
  }
  const bool bit_shuffle = flags & kBitShuffle;
  uint8_t* shuffled = bit_shuffle ? Scratch(blocksize) : nullptr;
  for (size_t b = 0; b < nblocks; ++b) {
    const size_t bsize = std::min(blocksize, nbytes - b * blocksize);
    const bool leftover = bsize < blocksize;
    const size_t nsplits = (!(flags & kDontSplit) && kTypesize <= kMaxSplits &&
                            blocksize / kTypesize >= kMinBufferSize && !leftover)
                               ? kTypesize
                               : 1;
    const size_t split = bsize / nsplits;
    uint8_t* block = out + b * blocksize;
    uint8_t* streams = bit_shuffle ? shuffled : block;
    size_t pos = Get32(frame + kHeader + 4 * b);
    for (size_t s = 0; s < nsplits; ++s) {
      if (pos < kHeader || pos > size - 4) {
        return Corrupt(absl::StrCat("block ", b, " starts at byte ", pos, " of ", size));
      }
      const size_t csize = Get32(frame + pos);
      pos += 4;
      if (csize > size - pos) {
        return Corrupt(absl::StrCat("block ", b, " has a stream of ", csize, " bytes at byte ",
                                    pos, " of ", size));
      }
      if (csize == split) {
        std::memcpy(streams + s * split, frame + pos, split);
      } else {
        const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(frame + pos),
                                            reinterpret_cast<char*>(streams + s * split),
                                            static_cast<int>(csize), static_cast<int>(split));
        if (got != static_cast<int>(split)) {
          return Corrupt(absl::StrCat("block ", b, "'s LZ4 stream at byte ", pos, " gave ", got,
                                      " bytes, not ", split));
        }
      }
      pos += csize;
    }
    if (bit_shuffle) {
      if (Shuffled(bsize)) {
        kernels::BitUnshuffle4(shuffled, bsize / kTypesize, block);
      } else {
        std::memcpy(block, shuffled, bsize);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace shotstream::wire
