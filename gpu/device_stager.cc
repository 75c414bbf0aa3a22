#include "shotstream/gpu/device_stager.h"

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "shotstream/gpu/cuda_runtime.h"

#ifdef SHOTSTREAM_CUDA
#include <cuda_runtime_api.h>
#endif

namespace shotstream::gpu {
namespace {

#ifdef SHOTSTREAM_CUDA
// OK, or INTERNAL naming the call and CUDA's reason.
absl::Status Cuda(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", cudaGetErrorString(e)));
}

// Where no status can be returned (a DeviceShot's destructor): said on stderr.
void Report(cudaError_t e, const char* call) {
  if (e != cudaSuccess) std::fprintf(stderr, "shotstream: %s: %s\n", call, cudaGetErrorString(e));
}
#endif

}  // namespace

struct DeviceStager::Slot {
  void* device = nullptr;  // device memory
  size_t capacity = 0;
  void* event = nullptr;   // cudaEvent_t: the copy into this slot is done
  void* consumer_done = nullptr;  // cudaEvent_t: the consumer's work on the slot is done
  bool consumer_pending = false;  // consumer_done was recorded and must be waited on
  bool busy = false;
};

DeviceShot::DeviceShot(DeviceShot&& o) noexcept { *this = std::move(o); }

void DeviceShot::Done() {
  if (stager_ != nullptr && slot_ >= 0) {
    stager_->Recycle(slot_, waited_, consumer_stream_, std::move(host_));
  }
  stager_ = nullptr;
  slot_ = -1;
}

DeviceShot& DeviceShot::operator=(DeviceShot&& o) noexcept {
  if (this != &o) {
    Done();
    stager_ = o.stager_;
    consumer_stream_ = o.consumer_stream_;
    waited_ = o.waited_;
    slot_ = o.slot_;
    device_ = o.device_;
    size_ = o.size_;
    on_device_ = o.on_device_;
    host_ = std::move(o.host_);
    o.stager_ = nullptr;
    o.slot_ = -1;
    o.device_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

DeviceShot::~DeviceShot() { Done(); }

absl::Status DeviceShot::WaitOn(void* cuda_stream) const {
#ifdef SHOTSTREAM_CUDA
  if (on_device_) {
    absl::Status s = Cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(cuda_stream),
                                              static_cast<cudaEvent_t>(
                                                  stager_->slots_[slot_]->event),
                                              0),
                          "cudaStreamWaitEvent");
    if (!s.ok()) return s;
    consumer_stream_ = cuda_stream;
    waited_ = true;
  }
#else
  (void)cuda_stream;
#endif
  return absl::OkStatus();
}

absl::Status DeviceShot::Synchronize() const {
#ifdef SHOTSTREAM_CUDA
  if (on_device_) {
    return Cuda(cudaEventSynchronize(static_cast<cudaEvent_t>(stager_->slots_[slot_]->event)),
                "cudaEventSynchronize");
  }
#endif
  return absl::OkStatus();
}

absl::Status DeviceShot::CopyToHost(float* dst) const {
#ifdef SHOTSTREAM_CUDA
  if (on_device_) {
    if (absl::Status s = Synchronize(); !s.ok()) return s;
    return Cuda(cudaMemcpy(dst, device_, size_ * sizeof(float), cudaMemcpyDeviceToHost),
                "cudaMemcpy (device to host)");
  }
#endif
  if (size_ > 0) std::memcpy(dst, device_, size_ * sizeof(float));
  return absl::OkStatus();
}

DeviceStager::DeviceStager(Options options)
    : options_(options), on_device_(CudaDeviceAvailable()) {
  SayHostFallbackOnce();
  const int n = std::max(1, options_.slots);
  for (int i = 0; i < n; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    free_slots_.push_back(i);
  }
#ifdef SHOTSTREAM_CUDA
  if (on_device_) {
    cudaStream_t s;
    init_ = Cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                 "cudaStreamCreateWithFlags");
    if (init_.ok()) stream_ = s;
    for (auto& slot : slots_) {
      cudaEvent_t e = nullptr, d = nullptr;
      if (init_.ok()) {
        init_ = Cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
      }
      if (init_.ok()) {
        init_ = Cuda(cudaEventCreateWithFlags(&d, cudaEventDisableTiming), "cudaEventCreate");
      }
      slot->event = e;
      slot->consumer_done = d;
    }
  }
#endif
}

DeviceStager::~DeviceStager() {
#ifdef SHOTSTREAM_CUDA
  if (on_device_) {
    if (stream_ != nullptr) {
      Report(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize");
    }
    for (auto& slot : slots_) {
      if (slot->device != nullptr) Report(cudaFree(slot->device), "cudaFree");
      if (slot->event != nullptr) {
        Report(cudaEventDestroy(static_cast<cudaEvent_t>(slot->event)), "cudaEventDestroy");
      }
      if (slot->consumer_done != nullptr) {
        Report(cudaEventDestroy(static_cast<cudaEvent_t>(slot->consumer_done)),
               "cudaEventDestroy");
      }
    }
    if (stream_ != nullptr) {
      Report(cudaStreamDestroy(static_cast<cudaStream_t>(stream_)), "cudaStreamDestroy");
    }
  }
#endif
}

void DeviceStager::Recycle(int slot, bool waited, void* consumer, HostBuffer host) {
  Slot& s = *slots_[slot];
#ifdef SHOTSTREAM_CUDA
  if (on_device_) {
    // The pinned source may be refilled only after the copy read it.
    Report(cudaEventSynchronize(static_cast<cudaEvent_t>(s.event)), "cudaEventSynchronize");
    if (waited) {
      // Work the consumer ordered after the copy may still read the device buffer: the
      // next copy into this slot waits for it (on the GPU, not here).
      const cudaError_t e = cudaEventRecord(static_cast<cudaEvent_t>(s.consumer_done),
                                            static_cast<cudaStream_t>(consumer));
      Report(e, "cudaEventRecord");
      s.consumer_pending = e == cudaSuccess;
    }
  }
#else
  (void)waited;
  (void)consumer;
#endif
  host.Release();
  s.busy = false;
  free_slots_.push_back(slot);
}

absl::StatusOr<DeviceShot> DeviceStager::Stage(HostBuffer host) {
  if (!init_.ok()) return init_;
  if (free_slots_.empty()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "all ", slots_.size(), " device slots are held by earlier shots; destroy a DeviceShot "
        "(or raise Options::slots) before staging another"));
  }
  const int slot = free_slots_.front();
  free_slots_.pop_front();
  Slot& s = *slots_[slot];
  s.busy = true;
  DeviceShot out;
  out.stager_ = this;
  out.slot_ = slot;
  out.size_ = host.size();
  const size_t bytes = host.size() * sizeof(float);
  ++stats_.copies;
  stats_.bytes += bytes;
#ifdef SHOTSTREAM_CUDA
  if (on_device_) {
    if (s.capacity < bytes) {
      if (s.device != nullptr) Report(cudaFree(s.device), "cudaFree");
      s.device = nullptr;
      s.capacity = 0;
      if (const cudaError_t e = cudaMalloc(&s.device, bytes); e != cudaSuccess) {
        s.device = nullptr;
        s.busy = false;
        free_slots_.push_back(slot);
        out.stager_ = nullptr;
        return absl::ResourceExhaustedError(absl::StrCat("cudaMalloc of ", bytes,
                                                         " bytes failed: ",
                                                         cudaGetErrorString(e)));
      }
      s.capacity = bytes;
      ++stats_.device_allocations;
    }
    cudaStream_t stream = static_cast<cudaStream_t>(stream_);
    absl::Status st;
    if (s.consumer_pending) {
      st = Cuda(cudaStreamWaitEvent(stream, static_cast<cudaEvent_t>(s.consumer_done), 0),
                "cudaStreamWaitEvent");
      s.consumer_pending = false;
    }
    if (st.ok()) {
      st = Cuda(cudaMemcpyAsync(s.device, host.data(), bytes, cudaMemcpyHostToDevice, stream),
                "cudaMemcpyAsync");
    }
    if (st.ok()) st = Cuda(cudaEventRecord(static_cast<cudaEvent_t>(s.event), stream),
                           "cudaEventRecord");
    if (!st.ok()) {
      s.busy = false;
      free_slots_.push_back(slot);
      out.stager_ = nullptr;
      return st;
    }
    out.device_ = static_cast<const float*>(s.device);
    out.on_device_ = true;
    out.host_ = std::move(host);  // the pinned source stays alive until the copy is done
    return out;
  }
#endif
  out.device_ = host.data();
  out.on_device_ = false;
  out.host_ = std::move(host);
  return out;
}

}  // namespace shotstream::gpu
