// CUDA devices. Compiled everywhere; the CUDA parts only with
// TENSORD_WITH_CUDA (set when the toolkit was found at build time). Without
// a driver or a GPU at run time, discovery returns none and says why, so a
// CUDA build still starts and serves the CPU.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/cuda_discovery.h"

#if TENSORD_WITH_CUDA
#include <cuda_runtime.h>

#include "runtime/memory/cuda_backend.h"
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
namespace {

absl::Status CudaStatus(cudaError_t err, absl::string_view what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(err)));
}

class CudaDevice : public Device {
 public:
  CudaDevice(int index, const cudaDeviceProp& prop,
             std::unique_ptr<CachingAllocator> allocator)
      : index_(index), allocator_(std::move(allocator)) {
    desc_.name = absl::StrCat("cuda:", index);
    desc_.kind = DeviceKind::kCuda;
    desc_.description = prop.name;
    desc_.total_memory = prop.totalGlobalMem;
    desc_.compute_capability = absl::StrCat(prop.major, ".", prop.minor);
  }
  const DeviceDescription& description() const override { return desc_; }
  CachingAllocator* allocator() override { return allocator_.get(); }
  absl::Status CopyFromHost(void* dst, const void* src, size_t bytes,
                            StreamHandle stream) override {
    return Copy(dst, src, bytes, cudaMemcpyHostToDevice, stream);
  }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes,
                          StreamHandle stream) override {
    return Copy(dst, src, bytes, cudaMemcpyDeviceToHost, stream);
  }
  absl::Status Synchronize(StreamHandle stream) override {
    cudaSetDevice(index_);
    return CudaStatus(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
                      "cudaStreamSynchronize");
  }

 private:
  absl::Status Copy(void* dst, const void* src, size_t bytes,
                    cudaMemcpyKind kind, StreamHandle stream) {
    if (bytes == 0) return absl::OkStatus();
    cudaSetDevice(index_);
    auto s = static_cast<cudaStream_t>(stream);
    absl::Status status = CudaStatus(cudaMemcpyAsync(dst, src, bytes, kind, s),
                                     "cudaMemcpyAsync");
    if (!status.ok()) return status;
    return CudaStatus(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }

  int index_;
  DeviceDescription desc_;
  std::unique_ptr<CachingAllocator> allocator_;
};

}  // namespace

std::vector<std::unique_ptr<Device>> DiscoverCudaDevices(
    std::string* why_none) {
  std::vector<std::unique_ptr<Device>> devices;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    *why_none =
        absl::StrCat("cudaGetDeviceCount failed: ", cudaGetErrorString(err));
    return devices;
  }
  if (count == 0) {
    *why_none = "the CUDA driver reports no devices";
    return devices;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    std::memset(&prop, 0, sizeof(prop));
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    auto allocator = MakeCudaCachingAllocator(i);
    if (!allocator.ok()) {
      *why_none = std::string(allocator.status().message());
      continue;
    }
    devices.push_back(
        std::make_unique<CudaDevice>(i, prop, *std::move(allocator)));
  }
  return devices;
}

bool CudaBuilt() { return true; }

#else  // !TENSORD_WITH_CUDA

std::vector<std::unique_ptr<Device>> DiscoverCudaDevices(
    std::string* why_none) {
  *why_none =
      "this tensord was built without the CUDA toolkit (rebuild on a machine "
      "with /usr/local/cuda or $CUDA_PATH)";
  return {};
}

bool CudaBuilt() { return false; }

#endif  // TENSORD_WITH_CUDA

}  // namespace tensord
