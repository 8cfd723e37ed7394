#include "kernels/cpu/random.h"

#include <array>
#include <cmath>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// Philox4x32-10 (Salmon et al., SC'11): ten rounds of multiply-xor mixing of
// a 128-bit counter under a 64-bit key.
std::array<uint32_t, 4> Philox(uint64_t counter, uint64_t key) {
  uint32_t c[4] = {static_cast<uint32_t>(counter),
                   static_cast<uint32_t>(counter >> 32), 0, 0};
  uint32_t k0 = static_cast<uint32_t>(key),
           k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c[2];
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1;
    c[1] = static_cast<uint32_t>(p1);
    c[3] = static_cast<uint32_t>(p0);
    c[0] = n0;
    c[2] = n2;
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return {c[0], c[1], c[2], c[3]};
}

// Uniform in (0, 1]: never 0, so log() in Box-Muller is finite.
double ToUnit(uint32_t x) {
  return (static_cast<double>(x) + 1.0) / 4294967296.0;
}

}  // namespace

absl::Status FillRandom(Distribution dist, uint64_t seed, uint64_t offset,
                        const StridedView& out) {
  if (!out.is_contiguous()) {
    return absl::InternalError("FillRandom needs a contiguous output");
  }
  return DispatchFloat(out.dtype, "random", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.ptr<T>();
    const int64_t n = out.numel();
    const int64_t blocks = (n + 3) / 4;
    ParallelFor(blocks, 16, [&](int64_t b, int64_t e) {
      for (int64_t blk = b; blk < e; ++blk) {
        const auto r = Philox(offset + static_cast<uint64_t>(blk), seed);
        double v[4];
        if (dist == Distribution::kUniform) {
          for (int i = 0; i < 4; ++i) v[i] = ToUnit(r[i]) - 0x1p-32;
        } else {
          for (int pair = 0; pair < 2; ++pair) {
            const double u1 = ToUnit(r[2 * pair]), u2 = ToUnit(r[2 * pair + 1]);
            const double radius = std::sqrt(-2.0 * std::log(u1));
            v[2 * pair] = radius * std::cos(2 * M_PI * u2);
            v[2 * pair + 1] = radius * std::sin(2 * M_PI * u2);
          }
        }
        for (int i = 0; i < 4 && blk * 4 + i < n; ++i)
          o[blk * 4 + i] = static_cast<T>(v[i]);
      }
    });
  });
}

}  // namespace cpu
}  // namespace tensord
