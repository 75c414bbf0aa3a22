#include "shotstream/gpu/cuda_runtime.h"

#include <cstdio>
#include <mutex>

#ifdef SHOTSTREAM_CUDA
#include <cuda_runtime_api.h>
#endif

namespace shotstream::gpu {
namespace {

struct Probe {
  bool available = false;
  std::string description;
};

const Probe& GetProbe() {
  static const Probe* probe = [] {
    auto* p = new Probe();
#ifdef SHOTSTREAM_CUDA
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      p->description = std::string("no CUDA device (") +
                       (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") +
                       "): using host memory";
    } else {
      cudaDeviceProp prop;
      cudaGetDeviceProperties(&prop, 0);
      p->available = true;
      p->description = std::string("CUDA device 0: ") + prop.name;
    }
#else
    p->description = "built without CUDA (use --config=cuda): using host memory";
#endif
    return p;
  }();
  return *probe;
}

}  // namespace

bool BuiltWithCuda() {
#ifdef SHOTSTREAM_CUDA
  return true;
#else
  return false;
#endif
}

bool CudaDeviceAvailable() { return GetProbe().available; }

std::string DescribeDevice() { return GetProbe().description; }

void SayHostFallbackOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    const Probe& p = GetProbe();
    if (!p.available) std::fprintf(stderr, "shotstream: %s\n", p.description.c_str());
  });
}

}  // namespace shotstream::gpu
