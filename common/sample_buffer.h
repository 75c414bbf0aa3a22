// SampleBuffer: bytes for decoded samples, allocated without zero-filling (every byte is
// written by the decoder) and handed on without copying (to gRPC as a slice).
//
// Move-only; not thread-safe.
#ifndef SHOTSTREAM_SERVER_COMMON_SAMPLE_BUFFER_H_
#define SHOTSTREAM_SERVER_COMMON_SAMPLE_BUFFER_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace shotstream {

class SampleBuffer {
 public:
  SampleBuffer() = default;
  explicit SampleBuffer(size_t size) : data_(new uint8_t[size]), size_(size) {}
  // A copy of `bytes` (tests).
  static SampleBuffer CopyOf(std::string_view bytes) {
    SampleBuffer b(bytes.size());
    if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
    return b;
  }

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const {
    return std::string_view(reinterpret_cast<const char*>(data_.get()), size_);
  }
  // Keeps the first n bytes (n <= size()); the allocation stays as it was.
  void truncate(size_t n) {
    if (n < size_) size_ = n;
  }
  // Gives up ownership; the caller frees with delete[].
  uint8_t* release() {
    size_ = 0;
    return data_.release();
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
};

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_SAMPLE_BUFFER_H_
