// Checks that the absl::Mutex annotations (absl_mutex_annotations.cc) make TSan see the
// mutex without blinding it: run by annotations_test.sh. Two threads hand a counter back
// and forth 1000 times, under an absl::Mutex with Await (TSan must stay silent), or, with
// --race, also bump a second counter without the mutex (TSan must report it).
// Prints "tsan" first when built with TSan.
#include <cstdio>
#include <cstring>
#include <thread>

#include "absl/synchronization/mutex.h"

int main(int argc, char** argv) {
#if defined(__SANITIZE_THREAD__)
  std::puts("tsan");
#endif
  const bool race = argc > 1 && std::strcmp(argv[1], "--race") == 0;
  absl::Mutex mu;
  int turn = 0;       // guarded by mu
  long guarded = 0;   // guarded by mu
  long unguarded = 0;
  auto player = [&](int me) {
    for (int i = 0; i < 1000; ++i) {
      if (race) ++unguarded;
      absl::MutexLock lock(&mu);
      auto mine = [&] { return turn == me; };
      mu.Await(absl::Condition(&mine));
      ++guarded;
      turn = 1 - me;
    }
  };
  std::thread a(player, 0), b(player, 1);
  a.join();
  b.join();
  std::printf("guarded %ld unguarded %ld\n", guarded, unguarded);
  return guarded == 2000 ? 0 : 1;
}
