// TraceCrcs: the CRC-32 of each trace's stored samples in one file, kept once computed,
// so that a trace sent as stored (zero copy) again costs no pass over its bytes. The
// table belongs to one TraceFile, so to one file identity: a file changed under the
// server is a new TraceFile (DATA_LOSS, then a reload), and a byte that rots in storage
// after its trace was first sent still fails the client's check against the kept CRC.
//
// Memory is bounded by a TraceCrcBudget: a file's table (8 bytes a trace) is allocated
// on its first Store when the budget has room, and given back with the file; a file the
// budget cannot hold keeps nothing (its CRCs are computed on every send, as before).
//
// Thread-safe and lock-free: each trace's entry is one atomic word.
#ifndef SHOTSTREAM_SERVER_IO_TRACE_CRCS_H_
#define SHOTSTREAM_SERVER_IO_TRACE_CRCS_H_

#include <atomic>
#include <cstdint>

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
  // Tables refused for want of room, since the start.
  uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> limit_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> refusals_{0};
};

class TraceCrcs {
 public:
  // A table for traces [0, n_traces) of one file, allocated from `budget` (the process's
  // when null) on first Store.
  explicit TraceCrcs(uint64_t n_traces, TraceCrcBudget* budget = nullptr);
  ~TraceCrcs();
  TraceCrcs(const TraceCrcs&) = delete;
  TraceCrcs& operator=(const TraceCrcs&) = delete;

  // Whether trace `trace`'s CRC-32 is kept; when it is, *crc is it.
  bool Find(uint64_t trace, uint32_t* crc) const {
    const std::atomic<uint64_t>* table = table_.load(std::memory_order_acquire);
    if (table == nullptr || trace >= n_traces_) return false;
    const uint64_t e = table[trace].load(std::memory_order_relaxed);
    if ((e >> 32) == 0) return false;
    *crc = static_cast<uint32_t>(e);
    return true;
  }
  // Keeps trace `trace`'s CRC-32 (nothing where the budget has no room for the table).
  void Store(uint64_t trace, uint32_t crc) const;

  uint64_t n_traces() const { return n_traces_; }
  // Whether the table is allocated (some CRC was kept).
  bool held() const { return table_.load(std::memory_order_acquire) != nullptr; }

 private:
  uint64_t table_bytes() const { return n_traces_ * sizeof(std::atomic<uint64_t>); }

  const uint64_t n_traces_;
  TraceCrcBudget* const budget_;
  // Entry: 1 << 32 | crc once known, 0 before. Null until the first Store the budget let.
  mutable std::atomic<std::atomic<uint64_t>*> table_{nullptr};
  mutable std::atomic<bool> refused_{false};  // the budget said no: do not ask again
};

}  // namespace shotstream::io

#endif  // SHOTSTREAM_SERVER_IO_TRACE_CRCS_H_
