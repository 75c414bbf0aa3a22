#include "server/common/heap_trimmer.h"

#include <malloc.h>

namespace shotstream {

uint64_t HeapTrimmer::FreeHeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.fordblks;
}

bool HeapTrimmer::TrimIfWorthIt(uint64_t min_free_bytes) {
  if (FreeHeapBytes() <= min_free_bytes) return false;
  malloc_trim(0);
  return true;
}

HeapTrimmer::HeapTrimmer(std::function<bool()> idle, absl::Duration period,
                         uint64_t min_free_bytes) {
  thread_ = std::thread([this, idle = std::move(idle), period, min_free_bytes] {
    // Trimmed pages stay counted as free: trim again only once the heap has moved.
    size_t trimmed_at_free = 0, trimmed_at_used = 0;
    while (!stop_.WaitForNotificationWithTimeout(period)) {
      if (!idle()) continue;
      const struct mallinfo2 m = mallinfo2();
      if (m.fordblks == trimmed_at_free && m.uordblks == trimmed_at_used) continue;
      if (TrimIfWorthIt(min_free_bytes)) {
        const struct mallinfo2 after = mallinfo2();
        trimmed_at_free = after.fordblks;
        trimmed_at_used = after.uordblks;
      }
    }
  });
}

HeapTrimmer::~HeapTrimmer() {
  stop_.Notify();
  thread_.join();
}

}  // namespace shotstream
