// A synthetic compute kernel for gpu/device_check: spins on each element for a given
// number of iterations, so its duration can be set to match a copy.
#include <cuda_runtime.h>

namespace {

__global__ void BusyKernel(float* data, size_t n, int iterations) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float v = data[i];
  for (int k = 0; k < iterations; ++k) v = v * 0.999999f + 1e-7f;
  data[i] = v;
}

}  // namespace

// Launches BusyKernel over `n` floats at `data` on `stream`.
extern "C" cudaError_t LaunchBusyKernel(float* data, size_t n, int iterations,
                                        cudaStream_t stream) {
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
  BusyKernel<<<blocks, threads, 0, stream>>>(data, n, iterations);
  return cudaGetLastError();
}
