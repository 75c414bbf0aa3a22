// Whether this build has CUDA, and whether a GPU is usable at run time (checked once).
//
// Thread-safe.
#ifndef SHOTSTREAM_GPU_CUDA_RUNTIME_H_
#define SHOTSTREAM_GPU_CUDA_RUNTIME_H_

#include <string>

namespace shotstream::gpu {

// True when built with --config=cuda.
bool BuiltWithCuda();

// True when built with CUDA and a device answers (the callers fall back to host memory
// otherwise). Silent: see SayHostFallbackOnce.
bool CudaDeviceAvailable();

// Where staging to a GPU was asked for (DeviceStager) and no device is there: says once
// per process on stderr why, and that host memory is used. Does nothing on a GPU.
void SayHostFallbackOnce();

// One line for logs: "CUDA device 0: NVIDIA H200" or why there is none.
std::string DescribeDevice();

}  // namespace shotstream::gpu

#endif  // SHOTSTREAM_GPU_CUDA_RUNTIME_H_
