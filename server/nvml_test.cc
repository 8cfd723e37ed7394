// NVML opened at run time (server/nvml.h): absent, and a fake library.
#include "server/nvml.h"

#include <string>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(NvmlTest, AbsentLibraryMeansNoGpuMetrics) {
  std::string why;
  EXPECT_EQ(Nvml::Load(&why, "libnvidia-ml-absent.so.1"), nullptr);
  EXPECT_EQ(why, "libnvidia-ml-absent.so.1 not found");
}

TEST(NvmlTest, ReadsEveryGpuAndSkipsWhatIsNotSupported) {
  std::string why;
  auto nvml = Nvml::Load(&why, "server/libfake_nvml.so");
  ASSERT_NE(nvml, nullptr) << why;
  const std::vector<GpuReading> gpus = nvml->Read();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].uuid, "GPU-fake-0");
  EXPECT_DOUBLE_EQ(*gpus[0].utilization, 0.75);
  EXPECT_EQ(*gpus[0].memory_used_bytes, uint64_t{3} << 30);
  EXPECT_EQ(*gpus[0].memory_total_bytes, uint64_t{80} << 30);
  EXPECT_DOUBLE_EQ(*gpus[0].temperature_celsius, 61);
  EXPECT_EQ(gpus[1].index, 1u);
  EXPECT_FALSE(gpus[1].temperature_celsius.has_value());
}

}  // namespace
}  // namespace tensord
