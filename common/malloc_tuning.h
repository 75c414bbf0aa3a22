// Keeps large buffers (shots, chunks) on the heap and the heap from shrinking, so that a
// steady stream of same-sized shots does not pay mmap/munmap and page faults per shot
// (measured: it halved the client's CPU time per byte). For binaries only, not libraries:
// call once at the top of main() (or where a Python extension module is initialised,
// with an opt-out: client/python/native).
#ifndef SHOTSTREAM_SERVER_COMMON_MALLOC_TUNING_H_
#define SHOTSTREAM_SERVER_COMMON_MALLOC_TUNING_H_

#include <malloc.h>

#include <cstdlib>

namespace shotstream {

// Also one malloc arena for all threads (unless MALLOC_ARENA_MAX or GLIBC_TUNABLES says
// otherwise): the free top of a per-thread arena is never given back, even by
// malloc_trim, so a burst allocated on gRPC's threads (a refused 40 MB request) stayed
// resident for good; in the one arena HeapTrimmer gives it back (measured: +20-60 MB of
// anonymous memory after three refused 10-million-shot requests, against +0 MB).
inline void TuneMallocForLargeBuffers() {
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);   // glibc's maximum
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
  mallopt(M_TOP_PAD, 64 * 1024 * 1024);
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr && std::getenv("GLIBC_TUNABLES") == nullptr) {
    mallopt(M_ARENA_MAX, 1);
  }
}

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_MALLOC_TUNING_H_
