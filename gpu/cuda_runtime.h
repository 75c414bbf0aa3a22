// Whether this build has CUDA, and whether a GPU is usable at run time (checked once).
//
// Thread-safe.
#ifndef SHOTSTREAM_GPU_CUDA_RUNTIME_H_
#define SHOTSTREAM_GPU_CUDA_RUNTIME_H_

#include <string>

namespace shotstream::gpu {

// True when built with --config=cuda.
bool BuiltWithCuda();

// True when built with CUDA and a device answers; the first call that finds none says so
// once on stderr, with the reason, and the callers fall back to host memory.
bool CudaDeviceAvailable();

// One line for logs: "CUDA device 0: NVIDIA H200" or why there is none.
std::string DescribeDevice();

}  // namespace shotstream::gpu

#endif  // SHOTSTREAM_GPU_CUDA_RUNTIME_H_
