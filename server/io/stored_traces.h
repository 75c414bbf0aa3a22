// StoredTraces: a shot's traces sent as they are stored (zero copy), from file mappings
// that this object holds open (and the messages that send them hold it): where each
// trace's samples are, and their first touch and CRC-32, each guarded against the memory
// going away (a file truncated under its mapping).
//
// Thread-compatible: Touch, Visit and Crc only read; Keep changes the set (before it is
// shared).
#ifndef SHOTSTREAM_SERVER_IO_STORED_TRACES_H_
#define SHOTSTREAM_SERVER_IO_STORED_TRACES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace shotstream::io {

class StoredTraces {
 public:
  virtual ~StoredTraces() = default;

  // Trace i's samples (trace_bytes() of float32, big-endian when big_endian()).
  const std::vector<const uint8_t*>& traces() const { return traces_; }
  size_t size() const { return traces_.size(); }
  size_t trace_bytes() const { return trace_bytes_; }
  bool big_endian() const { return big_endian_; }

  // Reads one byte of every page of every trace: their first touch, where a page not in
  // memory is read from disk. DATA_LOSS naming the file and byte offset when it vanished.
  virtual absl::Status Touch() const = 0;
  // Calls use(i, samples) for traces i in [first, first + n), in order, under the same
  // guard and with the same error as Touch: `use` may be left by a jump when the memory
  // vanishes, so it must own nothing (write into memory held by its caller). The default
  // is for memory that cannot vanish.
  virtual absl::Status Visit(size_t first, size_t n,
                             absl::FunctionRef<void(size_t, const uint8_t*)> use) const;
  // The CRC-32 (zlib) of traces [first, first + n) continued from `crc` (by default read
  // through Visit).
  virtual absl::StatusOr<uint32_t> Crc(size_t first, size_t n, uint32_t crc) const;
  // The CRC-32 of traces [first, first + n) where it takes no read: every one's is kept
  // (whole traces of a file), and this is their join; else nullopt (Crc reads them).
  // Never touches the traces' memory. The default keeps none.
  virtual std::optional<uint32_t> KeptCrc(size_t first, size_t n) const;
  // Keeps only traces `kept` (ascending indices into the current set).
  virtual void Keep(absl::Span<const size_t> kept);

 protected:
  StoredTraces(std::vector<const uint8_t*> traces, size_t trace_bytes, bool big_endian)
      : traces_(std::move(traces)), trace_bytes_(trace_bytes), big_endian_(big_endian) {}
  std::vector<const uint8_t*> traces_;

 private:
  const size_t trace_bytes_;
  const bool big_endian_;
};

}  // namespace shotstream::io

#endif  // SHOTSTREAM_SERVER_IO_STORED_TRACES_H_
