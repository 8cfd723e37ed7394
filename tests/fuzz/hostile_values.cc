#include "tests/fuzz/hostile_values.h"

#include <algorithm>
#include <limits>

namespace tensord {
namespace fuzz {

int64_t InterestingInt(Rng& rng) {
  static const int64_t kValues[] = {0,
                                    1,
                                    2,
                                    3,
                                    -1,
                                    -2,
                                    7,
                                    64,
                                    1000,
                                    1 << 20,
                                    int64_t{1} << 31,
                                    int64_t{1} << 32,
                                    int64_t{1} << 62,
                                    std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int32_t>::max()};
  if (Below(rng, 4) == 0) return static_cast<int64_t>(rng());
  return kValues[Below(rng, sizeof(kValues) / sizeof(kValues[0]))];
}

double InterestingFloat(Rng& rng) {
  static const double kValues[] = {0.0,
                                   -0.0,
                                   1.0,
                                   -1.0,
                                   0.5,
                                   1e300,
                                   -1e300,
                                   std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN(),
                                   1e-320,
                                   9.3e18,
                                   -9.3e18};
  return kValues[Below(rng, sizeof(kValues) / sizeof(kValues[0]))];
}

uint64_t PickHandle(Rng& rng, const std::vector<uint64_t>& ids) {
  const uint64_t id = ids[Below(rng, ids.size())];
  switch (Below(rng, 6)) {
    case 0:
      return id + 1;
    case 1:
      return id - 1;
    default:
      return id;
  }
}

uint64_t MaxHandle(const std::vector<uint64_t>& ids) {
  uint64_t m = 0;
  for (uint64_t id : ids) {
    if (id != std::numeric_limits<uint64_t>::max()) m = std::max(m, id);
  }
  return m;
}

}  // namespace fuzz
}  // namespace tensord
