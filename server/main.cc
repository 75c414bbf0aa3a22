// shotstream_server: serves SEG-Y shot gathers over gRPC.
//   shotstream_server --listen=0.0.0.0:50051 --dataset=line1=/data/line1/*.sgy
//   shotstream_server --config=/etc/shotstream/config.yaml [flags override the file]
// Prints "shotstream listening on HOST:PORT" on stdout once it listens (datasets LOADING),
// then "shotstream datasets loaded: N READY, M FAILED" once each has loaded. SIGTERM/SIGINT:
// drain (ShotStreamServer::Drain), exit 0. SIGHUP: reload the tokens and the configuration
// (ShotStreamServer::Reload), and retry FAILED datasets. The flags are in
// server/config/server_flags.cc.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/malloc_tuning.h"
#include "server/app/shotstream_server.h"
#include "server/config/server_flags.h"

namespace {

int Fail(const std::string& message) {
  std::cerr << "shotstream_server: " << message << std::endl;
  return 2;
}

// A "SIGHUP: ..." line on stderr in one write: the datasets' load threads print theirs
// meanwhile, and a line written in pieces would be cut by them.
void Say(const std::string& line) {
  const std::string whole = absl::StrCat("SIGHUP: ", line, "\n");
  std::fwrite(whole.data(), 1, whole.size(), stderr);
}

}  // namespace

int main(int argc, char** argv) {
  shotstream::TuneMallocForLargeBuffers();
  // Debian's Abseil is built with absl::Mutex's deadlock detection on (a graph of lock
  // orders kept on every acquisition); the thread-safety analysis and TSan check our
  // locking, so the server does not pay for it on each lock.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Signals are taken by this thread with sigwait; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto command_line = shotstream::config::ParseServerCommandLine(argc, argv);
  if (!command_line.ok()) return Fail(std::string(command_line.status().message()));
  const shotstream::config::ServerConfig& cfg = command_line->config;
  if (command_line->check_config) {
    absl::Status s = shotstream::server::CheckConfig(cfg);
    if (!s.ok()) return Fail(std::string(s.message()));
    std::printf("config OK: listen %s, %zu datasets:", cfg.listen.c_str(), cfg.datasets.size());
    for (const auto& d : cfg.datasets) std::printf(" %s", d.name.c_str());
    std::printf("\n");
    return 0;
  }
  using shotstream::server::ShotStreamServer;
  if (command_line->index_only) return ShotStreamServer::IndexOnly(cfg) ? 0 : 1;

  shotstream::server::RunOptions run;
  run.corrupt_shot_for_testing = command_line->corrupt_shot_for_testing;
  auto server = ShotStreamServer::Start(cfg, run);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  std::printf("shotstream listening on %s\n", (*server)->address().c_str());
  std::fflush(stdout);
  // The second line, from a thread of its own: signals are taken meanwhile.
  std::thread loaded([server = server->get()] {
    if (const std::optional<std::string> summary = server->AwaitLoaded()) {
      std::printf("shotstream datasets loaded: %s\n", summary->c_str());
      std::fflush(stdout);
    }
  });

  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    if (!cfg.auth_token_file.empty()) {
      const absl::Status s = (*server)->ReloadTokens();
      Say(s.ok() ? absl::StrCat("tokens reloaded (", (*server)->token_count(), ")")
                 : absl::StrCat("token file not reloaded, the old tokens stay: ", s.message()));
    }
    // The configuration made again (--config read anew, the same flags over it).
    auto next = shotstream::config::RebuildServerConfig();
    if (!next.ok()) {
      Say(absl::StrCat("configuration not reloaded, the old one stays: ",
                       next.status().message()));
      continue;
    }
    const std::vector<std::string> said = (*server)->Reload(*next);
    for (const std::string& line : said) Say(line);
    if (said.empty() || !absl::StartsWith(said[0], "configuration not reloaded")) {
      Say(absl::StrCat("configuration reloaded", said.empty() ? " (nothing changed)" : ""));
    }
  }
  std::fprintf(stderr, "shotstream_server: signal: NOT_SERVING, draining streams (grace %s)\n",
               absl::FormatDuration(cfg.grace_period).c_str());
  (*server)->Drain();
  loaded.join();  // Drain has ended the loading
  std::fprintf(stderr, "shotstream_server: stopped (%lld shots sent)\n",
               static_cast<long long>((*server)->shots_sent()));
  // Exit now: gRPC's shutdown in ~Server joins threads that poll every 10 s (it kept a
  // stopped server up to 10 s more). Sanitizer builds run every destructor, for checks.
  std::fflush(nullptr);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  std::_Exit(0);
#endif
  return 0;
}
