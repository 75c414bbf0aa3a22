// Gives freed heap memory back to the system while the process is idle: the servers tune
// malloc never to shrink the heap (malloc_tuning.h), which is right while shots stream
// but would keep a burst's memory (a refused oversized request, a stream of huge shots)
// for good. Every `period` the trimmer asks `idle`; when it says so and the heap holds
// more than `min_free_bytes` free, malloc_trim(0) returns the free pages.
//
// Thread-safe: the trimmer runs on its own thread; `idle` is called from it.
#ifndef SHOTSTREAM_SERVER_COMMON_HEAP_TRIMMER_H_
#define SHOTSTREAM_SERVER_COMMON_HEAP_TRIMMER_H_

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace shotstream {

class HeapTrimmer {
 public:
  HeapTrimmer(std::function<bool()> idle, absl::Duration period = absl::Seconds(1),
              uint64_t min_free_bytes = 16ull << 20);
  ~HeapTrimmer();  // stops and joins
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  // Free bytes in malloc's heap now (all arenas), as mallinfo2 reports them.
  static uint64_t FreeHeapBytes();
  // Trims now if the heap holds more than min_free_bytes free; true if it did.
  static bool TrimIfWorthIt(uint64_t min_free_bytes);

 private:
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_HEAP_TRIMMER_H_
