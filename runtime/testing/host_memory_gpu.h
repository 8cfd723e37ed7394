// Test-only: a device of kind kCuda made of host memory, for CPU-only tests
// of the paths a GPU takes (staging, streams, asynchronous copies). Copies
// are memcpy, Synchronize does nothing, and with a staging allocator
// AllocateStaging hands out its blocks (as pinned staging would). Tests
// derive from it to add streams or gated completions.
//
// Ownership: owns both allocators. Thread safety: as the allocators.
#ifndef TENSORD_RUNTIME_TESTING_HOST_MEMORY_GPU_H_
#define TENSORD_RUNTIME_TESTING_HOST_MEMORY_GPU_H_

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "runtime/device.h"
#include "runtime/memory/caching_allocator.h"

namespace tensord {
namespace testing {

class HostMemoryGpu : public Device {
 public:
  // `staging` may be null: the device then has no staging buffers.
  HostMemoryGpu(std::string name, std::unique_ptr<CachingAllocator> allocator,
                std::unique_ptr<CachingAllocator> staging = nullptr)
      : allocator_(std::move(allocator)), staging_(std::move(staging)) {
    desc_.name = std::move(name);
    desc_.kind = DeviceKind::kCuda;  // not the CPU: transfers stage
  }
  const DeviceDescription& description() const override { return desc_; }
  CachingAllocator* allocator() override { return allocator_.get(); }
  CachingAllocator* staging_allocator() override { return staging_.get(); }
  absl::StatusOr<StagingBuffer> AllocateStaging(size_t bytes) override {
    if (staging_ == nullptr) return Device::AllocateStaging(bytes);
    return StagingBuffer::Allocate(staging_.get(), bytes);
  }
  absl::Status CopyFromHost(void* dst, const void* src, size_t bytes,
                            StreamHandle) override {
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes,
                          StreamHandle) override {
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status Synchronize(StreamHandle) override { return absl::OkStatus(); }

 private:
  DeviceDescription desc_;
  std::unique_ptr<CachingAllocator> allocator_;
  std::unique_ptr<CachingAllocator> staging_;
};

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_RUNTIME_TESTING_HOST_MEMORY_GPU_H_
