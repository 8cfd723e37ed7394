// Test-only: the fixture of suites that run ops on a real GPU. SetUp finds
// the first CUDA device, or skips the test saying why there is none (no
// toolkit at build time, no driver, no device). The OpContext starts on that
// device for session `session`; Values reads a tensor back as float64.
#ifndef TENSORD_RUNTIME_TESTING_CUDA_DEVICES_TEST_H_
#define TENSORD_RUNTIME_TESTING_CUDA_DEVICES_TEST_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cuda_discovery.h"
#include "runtime/device.h"
#include "runtime/ops/dispatch.h"

namespace tensord {
namespace testing {

class CudaDevicesTest : public ::testing::Test {
 public:  // helpers of a suite's fixture use the members too
  explicit CudaDevicesTest(uint64_t session) : session_(session) {}

  void SetUp() override {
    devices_ = DeviceRegistry::Create();
    for (const auto& d : devices_->devices()) {
      if (d->kind() == DeviceKind::kCuda && cuda_ == nullptr) cuda_ = d.get();
    }
    if (cuda_ == nullptr) {
      std::string why;
      DiscoverCudaDevices(&why);
      GTEST_SKIP() << "no CUDA device: " << why;
    }
    ctx_.device = cuda_;
    ctx_.devices = devices_.get();
    ctx_.alloc.session = session_;
  }

  // `t`'s values as float64 on the CPU, in row-major order.
  std::vector<double> Values(const Tensor& t) {
    auto host = ToDevice(t, devices_->cpu(), DType::kFloat64, ctx_);
    EXPECT_TRUE(host.ok()) << host.status();
    if (!host.ok()) return {};
    const double* p = host->view().ptr<const double>();
    return std::vector<double>(p, p + host->numel());
  }

  const uint64_t session_;
  std::unique_ptr<DeviceRegistry> devices_;
  Device* cuda_ = nullptr;
  OpContext ctx_;
};

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_RUNTIME_TESTING_CUDA_DEVICES_TEST_H_
