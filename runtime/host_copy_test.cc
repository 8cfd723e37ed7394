// CopyHostBytes copies every byte exactly, below and above the split size,
// for sizes that are not multiples of its 1 MiB units.
#include "runtime/host_copy.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(HostCopyTest, CopiesEveryByteOfEverySize) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{4095}, kParallelCopyBytes - 1,
                   kParallelCopyBytes, kParallelCopyBytes + 1,
                   (size_t{13} << 20) + 12345}) {
    SCOPED_TRACE(n);
    std::vector<uint8_t> src(n), dst(n + 2, 0xAB);
    for (size_t i = 0; i < n; ++i)
      src[i] = static_cast<uint8_t>(i * 7 + i / 4099);
    CopyHostBytes(dst.data() + 1, src.data(), n);
    EXPECT_EQ(dst[0], 0xAB);
    EXPECT_EQ(dst[n + 1], 0xAB);
    EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 1));
  }
}

}  // namespace
}  // namespace tensord
