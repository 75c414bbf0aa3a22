#include "server/io/trace_crcs.h"

#include <new>

namespace shotstream::io {

TraceCrcBudget& TraceCrcBudget::Default() {
  static TraceCrcBudget* budget = new TraceCrcBudget(kDefaultBytes);
  return *budget;
}

bool TraceCrcBudget::TryTake(uint64_t bytes) {
  uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (used + bytes > limit()) {
      refusals_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

void TraceCrcBudget::GiveBack(uint64_t bytes) {
  used_.fetch_sub(bytes, std::memory_order_relaxed);
}

TraceCrcs::TraceCrcs(uint64_t n_traces, TraceCrcBudget* budget)
    : n_traces_(n_traces), budget_(budget != nullptr ? budget : &TraceCrcBudget::Default()) {}

TraceCrcs::~TraceCrcs() {
  std::atomic<uint64_t>* table = table_.load(std::memory_order_acquire);
  if (table == nullptr) return;
  delete[] table;
  budget_->GiveBack(table_bytes());
}

void TraceCrcs::Store(uint64_t trace, uint32_t crc) const {
  if (trace >= n_traces_) return;
  std::atomic<uint64_t>* table = table_.load(std::memory_order_acquire);
  if (table == nullptr) {
    if (refused_.load(std::memory_order_relaxed)) return;
    if (!budget_->TryTake(table_bytes())) {
      refused_.store(true, std::memory_order_relaxed);
      return;
    }
    std::atomic<uint64_t>* made = new (std::nothrow) std::atomic<uint64_t>[n_traces_]();
    if (made == nullptr) {
      budget_->GiveBack(table_bytes());
      refused_.store(true, std::memory_order_relaxed);
      return;
    }
    // Two first Stores race: one table stays, the other goes back.
    if (table_.compare_exchange_strong(table, made, std::memory_order_acq_rel)) {
      table = made;
    } else {
      delete[] made;
      budget_->GiveBack(table_bytes());
    }
  }
  table[trace].store(uint64_t{1} << 32 | crc, std::memory_order_relaxed);
}

}  // namespace shotstream::io
