#include "gpu/device_stager.h"

#include "absl/strings/str_cat.h"
#include "gpu/cuda_runtime.h"

#ifdef SHOTSTREAM_CUDA
#include <cuda_runtime_api.h>
#endif

namespace shotstream::gpu {

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

void DeviceShot::WaitOn(void* cuda_stream) const {
#ifdef SHOTSTREAM_CUDA
  if (on_device_) {
    cudaStreamWaitEvent(static_cast<cudaStream_t>(cuda_stream),
                        static_cast<cudaEvent_t>(stager_->slots_[slot_]->event), 0);
    consumer_stream_ = cuda_stream;
    waited_ = true;
  }
#else
  (void)cuda_stream;
#endif
}

void DeviceShot::Synchronize() const {
#ifdef SHOTSTREAM_CUDA
  if (on_device_) cudaEventSynchronize(static_cast<cudaEvent_t>(stager_->slots_[slot_]->event));
#endif
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
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    stream_ = s;
    for (auto& slot : slots_) {
      cudaEvent_t e;
      cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
      slot->event = e;
      cudaEvent_t d;
      cudaEventCreateWithFlags(&d, cudaEventDisableTiming);
      slot->consumer_done = d;
    }
  }
#endif
}

DeviceStager::~DeviceStager() {
#ifdef SHOTSTREAM_CUDA
  if (on_device_) {
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
    for (auto& slot : slots_) {
      if (slot->device != nullptr) cudaFree(slot->device);
      cudaEventDestroy(static_cast<cudaEvent_t>(slot->event));
      cudaEventDestroy(static_cast<cudaEvent_t>(slot->consumer_done));
    }
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  }
#endif
}

void DeviceStager::Recycle(int slot, bool waited, void* consumer, HostBuffer host) {
  Slot& s = *slots_[slot];
#ifdef SHOTSTREAM_CUDA
  if (on_device_) {
    // The pinned source may be refilled only after the copy read it.
    cudaEventSynchronize(static_cast<cudaEvent_t>(s.event));
    if (waited) {
      // Work the consumer ordered after the copy may still read the device buffer: the
      // next copy into this slot waits for it (on the GPU, not here).
      cudaEventRecord(static_cast<cudaEvent_t>(s.consumer_done),
                      static_cast<cudaStream_t>(consumer));
      s.consumer_pending = true;
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
      if (s.device != nullptr) cudaFree(s.device);
      s.device = nullptr;
      if (cudaMalloc(&s.device, bytes) != cudaSuccess) {
        free_slots_.push_back(slot);
        out.stager_ = nullptr;
        return absl::ResourceExhaustedError(absl::StrCat("cudaMalloc of ", bytes, " bytes failed"));
      }
      s.capacity = bytes;
      ++stats_.device_allocations;
    }
    cudaStream_t stream = static_cast<cudaStream_t>(stream_);
    if (s.consumer_pending) {
      cudaStreamWaitEvent(stream, static_cast<cudaEvent_t>(s.consumer_done), 0);
      s.consumer_pending = false;
    }
    cudaMemcpyAsync(s.device, host.data(), bytes, cudaMemcpyHostToDevice, stream);
    cudaEventRecord(static_cast<cudaEvent_t>(s.event), stream);
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
