// TraceCrcs: the CRC-32 of each trace's stored samples in one file, kept once computed,
// so that a trace sent as stored (zero copy) again costs no pass over its bytes. The
// table belongs to one TraceFile, so to one file identity: a file changed under the
// server is a new TraceFile (DATA_LOSS, then a reload), and a byte that rots in storage
// after its trace was first sent still fails the client's check against the kept CRC.
//
// Memory is bounded by a TraceCrcBudget: a file's table is made of blocks of kBlockTraces
// traces (8 bytes a trace), each allocated on the first Store into it when the budget has
// room, and given back with the file; so a file of 10^8 traces of which one shot is sent
// holds one block, not 800 MB. Once the budget refuses a block, the file keeps no more
// (its other traces' CRCs are computed on every send, as before).
//
// Thread-safe and lock-free: each trace's entry is one atomic word.
#ifndef SHOTSTREAM_SERVER_IO_TRACE_CRCS_H_
#define SHOTSTREAM_SERVER_IO_TRACE_CRCS_H_

#include <atomic>
#include <cstdint>
#include <memory>

namespace shotstream::io {

// Bytes that the process's TraceCrcs tables may hold together. Thread-safe.
class TraceCrcBudget {
 public:
  explicit TraceCrcBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}

  // The process's budget, which every TraceFile's table uses: kDefaultBytes until
  // SetLimit (the server's limits.crc_cache_bytes).
  static TraceCrcBudget& Default();
  static constexpr uint64_t kDefaultBytes = uint64_t{256} << 20;

  // Takes `bytes` when they fit under the limit; false (nothing taken) when not.
  bool TryTake(uint64_t bytes);
  void GiveBack(uint64_t bytes);
  // A new limit, for tables allocated from now on (those held stay).
  void SetLimit(uint64_t limit_bytes) { limit_.store(limit_bytes, std::memory_order_relaxed); }

  uint64_t limit() const { return limit_.load(std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  // Blocks refused for want of room (once a file), since the start.
  uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> limit_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> refusals_{0};
};

class TraceCrcs {
 public:
  static constexpr uint64_t kBlockTraces = 1 << 16;  // 512 KiB a block

  // A table for traces [0, n_traces) of one file, its blocks allocated from `budget` (the
  // process's when null) on first Store.
  explicit TraceCrcs(uint64_t n_traces, TraceCrcBudget* budget = nullptr);
  ~TraceCrcs();
  TraceCrcs(const TraceCrcs&) = delete;
  TraceCrcs& operator=(const TraceCrcs&) = delete;

  // Whether trace `trace`'s CRC-32 is kept; when it is, *crc is it.
  bool Find(uint64_t trace, uint32_t* crc) const {
    if (trace >= n_traces_) return false;
    const std::atomic<uint64_t>* block =
        blocks_[trace / kBlockTraces].load(std::memory_order_acquire);
    if (block == nullptr) return false;
    const uint64_t e = block[trace % kBlockTraces].load(std::memory_order_relaxed);
    if ((e >> 32) == 0) return false;
    *crc = static_cast<uint32_t>(e);
    return true;
  }
  // Keeps trace `trace`'s CRC-32 (nothing where the budget has no room for its block).
  void Store(uint64_t trace, uint32_t crc) const;

  uint64_t n_traces() const { return n_traces_; }
  // Bytes of the blocks held now.
  uint64_t held_bytes() const { return held_bytes_.load(std::memory_order_relaxed); }

 private:
  uint64_t n_blocks() const { return (n_traces_ + kBlockTraces - 1) / kBlockTraces; }
  uint64_t block_traces(uint64_t b) const {
    return b + 1 < n_blocks() ? kBlockTraces : n_traces_ - b * kBlockTraces;
  }

  const uint64_t n_traces_;
  TraceCrcBudget* const budget_;
  // Block b: traces [b kBlockTraces, ...), each entry 1 << 32 | crc once known, 0 before;
  // null until the first Store into it that the budget let.
  const std::unique_ptr<std::atomic<std::atomic<uint64_t>*>[]> blocks_;
  mutable std::atomic<uint64_t> held_bytes_{0};
  // The budget said no: this file asks no more (until it is opened again, after a reload).
  mutable std::atomic<bool> refused_{false};
};

}  // namespace shotstream::io

#endif  // SHOTSTREAM_SERVER_IO_TRACE_CRCS_H_
