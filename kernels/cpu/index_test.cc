// ScatterAddRows (Note [Row scatter_add]) against Scatter's element path on
// the materialised [n, D] index: repeated and negative rows, an index column
// read with a stride, float32 and float64; an index out of range is an
// error that writes nothing.
#include "kernels/cpu/index.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::Random;
using testing::View;

template <typename T>
void CheckAgainstScatter(int64_t rows, int64_t d, int64_t stride) {
  SCOPED_TRACE(::testing::Message()
               << "rows=" << rows << " d=" << d << " stride=" << stride);
  std::mt19937 rng(7);
  const int64_t n = 3 * rows + 1;  // more entries than rows: repeats
  std::vector<int64_t> column(n * stride, 999);  // unread between entries
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = static_cast<int64_t>(rng() % rows);
    column[i * stride] = i % 4 == 0 ? k - rows : k;  // some negative
  }
  std::vector<int64_t> full(n * d);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) full[i * d + j] = column[i * stride];
  }
  auto src = Random<T>(n * d, &rng);
  auto base = Random<T>(rows * d, &rng);
  std::vector<T> want = base, got = base;
  ASSERT_TRUE(Scatter(View(want, {rows, d}), 0, View(full, {n, d}),
                      View(src, {n, d}), /*add=*/true)
                  .ok());
  ASSERT_TRUE(ScatterAddRows(View(got, {rows, d}), column.data(), stride, n,
                             View(src, {n, d}))
                  .ok());
  for (int64_t i = 0; i < rows * d; ++i) EXPECT_EQ(got[i], want[i]) << i;
}

TEST(ScatterAddRows, MatchesScatterAdd) {
  CheckAgainstScatter<float>(512, 128, 1);  // an embedding's gradient
  CheckAgainstScatter<float>(7, 5, 3);
  CheckAgainstScatter<double>(9, 1, 2);
}

TEST(ScatterAddRows, AnIndexOutOfRangeWritesNothing) {
  std::vector<float> out(6, 1.0f), src(6, 2.0f);
  for (int64_t bad : {3, -4}) {
    std::vector<int64_t> column = {0, bad};
    absl::Status s = ScatterAddRows(View(out, {3, 2}), column.data(), 1, 2,
                                    View(src, {2, 2}));
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find("out of bounds for dimension with size 3"),
              std::string::npos)
        << s;
    for (float v : out) EXPECT_EQ(v, 1.0f);
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tensord
