// An FWI-style loop in C++: stream shots in a new random order each iteration, stage each
// one to the GPU on the stager's side stream while the previous shot is computed on, and
// report how long the loop waited on I/O.
//
//   fwi_loop --target=HOST:PORT --dataset=NAME [--iterations=2] [--compute_ms=20]
//
// Without a GPU the stager works on host memory and the "kernel" is a host reduction
// plus a fixed wait standing in for device time.
#include <algorithm>
#include <chrono>
#include <optional>
#include <cstdio>
#include <numeric>
#include <random>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "shotstream/client/client.h"
#include "shotstream/client/grpc_tuning.h"
#include "shotstream/gpu/cuda_runtime.h"
#include "shotstream/gpu/device_stager.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "server HOST:PORT");
ABSL_FLAG(std::string, dataset, "", "dataset name");
ABSL_FLAG(int, iterations, 2, "passes over every shot");
ABSL_FLAG(int, compute_ms, 20, "compute per shot");
ABSL_FLAG(uint32_t, queue_depth, 4, "shots read and received ahead");

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The per-shot "kernel": touches every sample, then the fixed device time.
double Compute(const shotstream::gpu::DeviceShot& shot, bool on_device, int ms) {
  double sum = 0;
  if (!on_device) {
    const float* p = shot.device_data();
    sum = std::accumulate(p, p + shot.size(), 0.0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  shotstream::client::TuneGrpcForLargeMessages();
  absl::ParseCommandLine(argc, argv);
  auto client = shotstream::client::Client::Connect(absl::GetFlag(FLAGS_target));
  if (!client.ok()) return std::fprintf(stderr, "%s\n", client.status().ToString().c_str()), 1;
  const std::string dataset = absl::GetFlag(FLAGS_dataset);
  auto info = (*client)->GetDataset(dataset);
  if (!info.ok()) return std::fprintf(stderr, "%s\n", info.status().ToString().c_str()), 1;
  std::printf("%s\n", shotstream::gpu::DescribeDevice().c_str());
  shotstream::gpu::DeviceStager stager;
  std::vector<int64_t> order = info->shot_ids;
  std::mt19937 rng(1);
  double checksum = 0;
  for (int it = 0; it < absl::GetFlag(FLAGS_iterations); ++it) {
    std::shuffle(order.begin(), order.end(), rng);
    shotstream::client::StreamOptions options;
    options.queue_depth = absl::GetFlag(FLAGS_queue_depth);
    auto reader = (*client)->Stream(dataset, order, options);
    double io_wait = 0, compute = 0;
    const auto start = Clock::now();
    shotstream::client::Shot shot;
    std::optional<shotstream::gpu::DeviceShot> current;
    size_t n = 0;
    for (;;) {
      const auto t0 = Clock::now();
      auto more = reader->Next(&shot);
      io_wait += Seconds(Clock::now() - t0);
      if (!more.ok()) return std::fprintf(stderr, "%s\n", more.status().ToString().c_str()), 1;
      if (!*more) break;
      auto staged = stager.Stage(std::move(shot.samples));  // copy starts on the side stream
      if (!staged.ok()) return std::fprintf(stderr, "%s\n", staged.status().ToString().c_str()), 1;
      // The compute stream waits for the copy, not the host.
      if (absl::Status s = staged->WaitOn(nullptr); !s.ok()) {
        return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
      }
      const auto t1 = Clock::now();
      checksum += Compute(*staged, stager.on_device(), absl::GetFlag(FLAGS_compute_ms));
      compute += Seconds(Clock::now() - t1);
      current = std::move(*staged);  // the previous shot's buffers go back
      ++n;
    }
    std::printf("iteration %d: %zu shots  total %.0f ms  io_wait %.0f ms  compute %.0f ms\n", it,
                n, Seconds(Clock::now() - start) * 1e3, io_wait * 1e3, compute * 1e3);
  }
  const auto stats = (*client)->pool().stats();
  std::printf("pool: %llu allocations, %llu reuses, pinned %s; checksum %.6g\n",
              static_cast<unsigned long long>(stats.allocations),
              static_cast<unsigned long long>(stats.reuses),
              (*client)->pool().pinned() ? "yes" : "no", checksum);
  return 0;
}
