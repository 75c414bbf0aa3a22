// DeviceStager: copies a shot from pinned host memory to device memory on its own
// non-blocking CUDA stream and records an event, so that the copy of shot k+1 overlaps
// the compute on shot k. The consumer makes its compute stream wait on the event
// (DeviceShot::WaitOn); the device and host buffers are recycled only after the event
// has completed.
//
// Without CUDA at build time or without a GPU at run time the same API works on host
// memory: device_data() is the host buffer and WaitOn does nothing (said once on stderr).
//
// Thread-compatible: one stager per consuming thread.
#ifndef SHOTSTREAM_GPU_DEVICE_STAGER_H_
#define SHOTSTREAM_GPU_DEVICE_STAGER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shotstream/gpu/pinned_buffer_pool.h"

namespace shotstream::gpu {

class DeviceStager;

// A shot on the device (or in host memory without a GPU). Move-only; destroying it hands
// its buffers back to the stager once the copy (and any work the consumer ordered after
// it with WaitOn) is known complete.
class DeviceShot {
 public:
  DeviceShot() = default;
  DeviceShot(DeviceShot&&) noexcept;
  DeviceShot& operator=(DeviceShot&&) noexcept;
  ~DeviceShot();

  const float* device_data() const { return device_; }
  size_t size() const { return size_; }  // floats
  bool on_device() const { return on_device_; }
  // Makes `cuda_stream` (a cudaStream_t; null: the legacy default stream) wait until the
  // copy is done. No-op on host memory. INTERNAL naming the CUDA call if it fails.
  absl::Status WaitOn(void* cuda_stream) const;
  // Blocks the calling thread until the copy is done.
  absl::Status Synchronize() const;
  // Copies the shot back into `dst` (size() floats) once the copy to the device is done:
  // device to host with CUDA, a memcpy on host memory. For checks that compare values.
  absl::Status CopyToHost(float* dst) const;

 private:
  friend class DeviceStager;
  void Done();

  DeviceStager* stager_ = nullptr;
  int slot_ = -1;
  mutable void* consumer_stream_ = nullptr;  // the stream given to WaitOn
  mutable bool waited_ = false;
  const float* device_ = nullptr;
  size_t size_ = 0;
  bool on_device_ = false;
  HostBuffer host_;  // kept alive until the copy is done
};

class DeviceStager {
 public:
  struct Options {
    int slots = 3;  // device buffers in the ring: one computing, one copying, one spare
  };
  struct Stats {
    uint64_t copies = 0;
    uint64_t bytes = 0;
    uint64_t device_allocations = 0;
  };

  DeviceStager() : DeviceStager(Options{}) {}
  explicit DeviceStager(Options options);
  ~DeviceStager();
  DeviceStager(const DeviceStager&) = delete;
  DeviceStager& operator=(const DeviceStager&) = delete;

  bool on_device() const { return on_device_; }

  // Starts the copy of `host` and returns at once; never blocks. RESOURCE_EXHAUSTED when
  // every slot is held by an earlier DeviceShot (the ring is the backpressure: destroy
  // one first; only this thread can), or when device memory runs out; INTERNAL naming
  // the CUDA call that failed otherwise.
  absl::StatusOr<DeviceShot> Stage(HostBuffer host);

  Stats stats() const { return stats_; }

 private:
  friend class DeviceShot;
  struct Slot;
  // The shot in `slot` is gone: its host buffer may be reused once the copy is done, and
  // the next copy into the slot waits for the work the consumer queued on `consumer`.
  void Recycle(int slot, bool waited, void* consumer, HostBuffer host);

  const Options options_;
  const bool on_device_;
  absl::Status init_;  // the stream's and events' creation; Stage returns it if it failed
  void* stream_ = nullptr;  // cudaStream_t
  std::vector<std::unique_ptr<Slot>> slots_;
  std::deque<int> free_slots_;
  Stats stats_;
};

}  // namespace shotstream::gpu

#endif  // SHOTSTREAM_GPU_DEVICE_STAGER_H_
