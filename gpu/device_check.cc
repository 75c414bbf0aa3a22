// device_check: the GPU half of shotstream's checks, for a machine with a GPU.
//
// Reports (one JSON line at the end):
//   - host-to-device GB/s through the pinned ring (PinnedBufferPool + DeviceStager) and
//     with a plain pinned cudaMemcpy of the same bytes (the limit);
//   - the share of copy time hidden behind a synthetic compute kernel of about the same
//     duration, when copies are staged on the side stream while the previous shot is
//     computed on.
// Exits 2 (and says why) where no GPU is usable. Built self-contained (static cudart) by
// gpu/device_check.sh.
#include <chrono>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "gpu/cuda_runtime.h"
#include "gpu/device_stager.h"
#include "gpu/pinned_buffer_pool.h"

extern "C" cudaError_t LaunchBusyKernel(float* data, size_t n, int iterations,
                                        cudaStream_t stream);

namespace {

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
  cudaHostAlloc(reinterpret_cast<void**>(&pinned), bytes, cudaHostAllocDefault);
  cudaMalloc(reinterpret_cast<void**>(&device), bytes);
  cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice);  // warm up
  auto t0 = Clock::now();
  for (int i = 0; i < shots; ++i) cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice);
  const double plain_s = Since(t0);

  // The ring: pool buffers staged on the side stream, nothing else running.
  PinnedBufferPool pool;
  DeviceStager stager;
  {
    auto warm = stager.Stage(pool.Acquire(n));
    warm->Synchronize();
  }
  t0 = Clock::now();
  {
    std::vector<DeviceShot> live;
    for (int i = 0; i < shots; ++i) {
      auto s = stager.Stage(pool.Acquire(n));
      if (!s.ok()) return std::fprintf(stderr, "%s\n", s.status().ToString().c_str()), 1;
      s->Synchronize();
    }
  }
  const double ring_s = Since(t0);

  // Calibrate the kernel to about one copy's time.
  cudaStream_t compute;
  cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking);
  int iterations = 64;
  double kernel_s = 0;
  for (int k = 0; k < 12; ++k) {
    t0 = Clock::now();
    LaunchBusyKernel(device, n, iterations, compute);
    cudaStreamSynchronize(compute);
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
      if (!s.ok()) return std::fprintf(stderr, "%s\n", s.status().ToString().c_str()), 1;
      s->WaitOn(compute);
      LaunchBusyKernel(const_cast<float*>(s->device_data()), n, iterations, compute);
      previous = std::move(*s);
    }
    cudaStreamSynchronize(compute);
  }
  const double both_s = Since(t0);
  const double copy_s = ring_s;
  const double compute_s = kernel_s * shots;
  const double hidden = (copy_s + compute_s - both_s) / copy_s;
  std::printf(
      "{\"plain_pinned_h2d_gbps\": %.3f, \"ring_h2d_gbps\": %.3f, \"ring_over_plain\": %.3f, "
      "\"copy_s\": %.4f, \"compute_s\": %.4f, \"overlapped_s\": %.4f, \"copy_hidden\": %.3f, "
      "\"pinned\": %s}\n",
      bytes * shots / plain_s / 1e9, bytes * shots / ring_s / 1e9, plain_s / ring_s, copy_s,
      compute_s, both_s, hidden, pool.pinned() ? "true" : "false");
  cudaFree(device);
  cudaFreeHost(pinned);
  cudaStreamDestroy(compute);
  return 0;
}
