// device_check: the GPU half of shotstream's checks, for a machine with a GPU.
//
// Reports (one JSON line at the end):
//   - that shots reach the device intact: each of `value_shots` shots, staged through the
//     ring with others in flight, read back and compared bit for bit (exit 1 otherwise);
//   - host-to-device GB/s through the pinned ring (PinnedBufferPool + DeviceStager) and
//     with a plain pinned cudaMemcpy of the same bytes (the limit);
//   - the share of copy time hidden behind a synthetic compute kernel of about the same
//     duration, when copies are staged on the side stream while the previous shot is
//     computed on.
// Every CUDA call's status is checked (exit 1 naming the call). Exits 2 (and says why)
// where no GPU is usable. Built self-contained (static cudart) by
// gpu/device_check.sh.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#include "shotstream/gpu/cuda_runtime.h"
#include "shotstream/gpu/device_stager.h"
#include "shotstream/gpu/pinned_buffer_pool.h"

extern "C" cudaError_t LaunchBusyKernel(float* data, size_t n, int iterations,
                                        cudaStream_t stream);

namespace {

// Exits 1 naming the call when CUDA reports an error.
#define CHECK_CUDA(call)                                                               \
  do {                                                                                 \
    const cudaError_t e = (call);                                                      \
    if (e != cudaSuccess) {                                                            \
      std::fprintf(stderr, "device_check: %s: %s\n", #call, cudaGetErrorString(e));    \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// Exits 1 with the status when it is an error.
void CheckOk(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "device_check: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main() {
  using namespace shotstream::gpu;
  std::printf("%s\n", DescribeDevice().c_str());
  if (!CudaDeviceAvailable()) return 2;
  const size_t n = 480 * 4000;  // floats per shot: 7.68 MB
  const size_t bytes = n * sizeof(float);
  const int shots = 64;

  // The limit: plain pinned cudaMemcpy of the same bytes.
  float* pinned = nullptr;
  float* device = nullptr;
  CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&pinned), bytes, cudaHostAllocDefault));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&device), bytes));
  CHECK_CUDA(cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice));  // warm up
  auto t0 = Clock::now();
  for (int i = 0; i < shots; ++i) {
    CHECK_CUDA(cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice));
  }
  const double plain_s = Since(t0);

  // The ring: pool buffers staged on the side stream, nothing else running.
  PinnedBufferPool pool;
  DeviceStager stager;
  if (!stager.on_device()) return std::fprintf(stderr, "device_check: stager on host\n"), 2;

  // Values: shots of distinct patterns, three in flight at a time, read back bit for bit.
  const int value_shots = 12;
  {
    std::vector<DeviceShot> live;
    std::vector<int> live_ids;
    std::vector<float> back(n);
    for (int i = 0; i < value_shots; ++i) {
      HostBuffer h = pool.Acquire(n);
      for (size_t k = 0; k < n; ++k) h[k] = static_cast<float>(i) * 1e6f + static_cast<float>(k);
      auto s = stager.Stage(std::move(h));
      CheckOk(s.status(), "Stage");
      live.push_back(std::move(*s));
      live_ids.push_back(i);
      if (live.size() == 3 || i == value_shots - 1) {
        for (size_t j = 0; j < live.size(); ++j) {
          CheckOk(live[j].CopyToHost(back.data()), "CopyToHost");
          for (size_t k = 0; k < n; ++k) {
            const float want = static_cast<float>(live_ids[j]) * 1e6f + static_cast<float>(k);
            if (back[k] != want) {
              std::fprintf(stderr, "device_check: shot %d sample %zu: %g on the device, %g sent\n",
                           live_ids[j], k, back[k], want);
              return 1;
            }
          }
        }
        live.clear();
        live_ids.clear();
      }
    }
  }
  {
    auto warm = stager.Stage(pool.Acquire(n));
    CheckOk(warm.status(), "Stage");
    CheckOk(warm->Synchronize(), "Synchronize");
  }
  t0 = Clock::now();
  {
    std::vector<DeviceShot> live;
    for (int i = 0; i < shots; ++i) {
      auto s = stager.Stage(pool.Acquire(n));
      CheckOk(s.status(), "Stage");
      CheckOk(s->Synchronize(), "Synchronize");
    }
  }
  const double ring_s = Since(t0);

  // Calibrate the kernel to about one copy's time.
  cudaStream_t compute;
  CHECK_CUDA(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  int iterations = 64;
  double kernel_s = 0;
  for (int k = 0; k < 12; ++k) {
    t0 = Clock::now();
    CHECK_CUDA(LaunchBusyKernel(device, n, iterations, compute));
    CHECK_CUDA(cudaStreamSynchronize(compute));
    kernel_s = Since(t0);
    if (kernel_s > plain_s / shots) break;
    iterations *= 2;
  }

  // Overlap: copy shot k+1 on the side stream while shot k is computed on.
  t0 = Clock::now();
  {
    DeviceShot previous;
    for (int i = 0; i < shots; ++i) {
      auto s = stager.Stage(pool.Acquire(n));
      CheckOk(s.status(), "Stage");
      CheckOk(s->WaitOn(compute), "WaitOn");
      CHECK_CUDA(LaunchBusyKernel(const_cast<float*>(s->device_data()), n, iterations, compute));
      previous = std::move(*s);
    }
    CHECK_CUDA(cudaStreamSynchronize(compute));
  }
  const double both_s = Since(t0);
  const double copy_s = ring_s;
  const double compute_s = kernel_s * shots;
  const double hidden = (copy_s + compute_s - both_s) / copy_s;
  std::printf(
      "{\"plain_pinned_h2d_gbps\": %.3f, \"ring_h2d_gbps\": %.3f, \"ring_over_plain\": %.3f, "
      "\"copy_s\": %.4f, \"compute_s\": %.4f, \"overlapped_s\": %.4f, \"copy_hidden\": %.3f, "
      "\"pinned\": %s, \"values_checked_shots\": %d}\n",
      bytes * shots / plain_s / 1e9, bytes * shots / ring_s / 1e9, plain_s / ring_s, copy_s,
      compute_s, both_s, hidden, pool.pinned() ? "true" : "false", value_shots);
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaStreamDestroy(compute));
  return 0;
}
