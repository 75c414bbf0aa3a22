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
    : n_traces_(n_traces),
      budget_(budget != nullptr ? budget : &TraceCrcBudget::Default()),
      blocks_(new std::atomic<std::atomic<uint64_t>*>[n_blocks()]()) {}

TraceCrcs::~TraceCrcs() {
  for (uint64_t b = 0; b < n_blocks(); ++b) delete[] blocks_[b].load(std::memory_order_acquire);
  budget_->GiveBack(held_bytes());
}

void TraceCrcs::Store(uint64_t trace, uint32_t crc) const {
  if (trace >= n_traces_) return;
  const uint64_t b = trace / kBlockTraces;
  std::atomic<uint64_t>* block = blocks_[b].load(std::memory_order_acquire);
  if (block == nullptr) {
    if (refused_.load(std::memory_order_relaxed)) return;
    const uint64_t bytes = block_traces(b) * sizeof(std::atomic<uint64_t>);
    if (!budget_->TryTake(bytes)) {
      refused_.store(true, std::memory_order_relaxed);
      return;
    }
    std::atomic<uint64_t>* made = new (std::nothrow) std::atomic<uint64_t>[block_traces(b)]();
    if (made == nullptr) {
      budget_->GiveBack(bytes);
      refused_.store(true, std::memory_order_relaxed);
      return;
    }
    // Two first Stores into a block race: one block stays, the other goes back.
    if (blocks_[b].compare_exchange_strong(block, made, std::memory_order_acq_rel)) {
      block = made;
      held_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    } else {
      delete[] made;
      budget_->GiveBack(bytes);
    }
  }
  block[trace % kBlockTraces].store(uint64_t{1} << 32 | crc, std::memory_order_relaxed);
}

}  // namespace shotstream::io
