#include "server/common/mapping_guard.h"

#include <setjmp.h>
#include <signal.h>

#include <cstdint>
#include <mutex>

namespace shotstream {
namespace {

struct Guard {
  sigjmp_buf env;
  uintptr_t begin = 0;
  uintptr_t end = 0;
  volatile sig_atomic_t active = 0;
};

thread_local Guard tls_guard;
struct sigaction previous_action;

void OnSigbus(int sig, siginfo_t* info, void* context) {
  Guard& g = tls_guard;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  if (g.active && addr >= g.begin && addr < g.end) {
    g.active = 0;
    siglongjmp(g.env, 1);
  }
  // Not a guarded read: what was there before.
  if ((previous_action.sa_flags & SA_SIGINFO) != 0 && previous_action.sa_sigaction != nullptr) {
    previous_action.sa_sigaction(sig, info, context);
    return;
  }
  if ((previous_action.sa_flags & SA_SIGINFO) == 0 && previous_action.sa_handler != SIG_DFL &&
      previous_action.sa_handler != SIG_IGN) {
    previous_action.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL);  // returning re-runs the access, which now ends the process
}

void InstallOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action = {};
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous_action);
  });
}

}  // namespace

bool RunGuardingMapping(const void* begin, size_t size, absl::FunctionRef<void()> touch) {
  InstallOnce();
  Guard& g = tls_guard;
  g.begin = reinterpret_cast<uintptr_t>(begin);
  g.end = g.begin + size;
  // Saves the signal mask, so that the jump out of the handler unblocks SIGBUS again.
  if (sigsetjmp(g.env, 1) != 0) return false;
  g.active = 1;
  touch();
  g.active = 0;
  return true;
}

}  // namespace shotstream
