// EmbeddingDenseBackward (Note [Embedding gradient rows]): hand-worked
// tables for repeats, padding_idx, scale_grad_by_freq and int32 indices; a
// table split over threads against the serial sum in index order; an index
// out of range is an error that writes nothing.
#include "kernels/cpu/embedding.h"

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

StridedView Int32View(std::vector<int32_t>& v) {
  StridedView s;
  s.data = v.data();
  s.dtype = DType::kInt32;
  s.ndim = 1;
  s.sizes[0] = static_cast<int64_t>(v.size());
  s.strides[0] = 1;
  return s;
}

// grad rows (1, 2), (3, 4), (5, 6) at rows 2, 0, 2 of a [4, 2] table.
const std::vector<float> kGrad = {1, 2, 3, 4, 5, 6};
const std::vector<int64_t> kIndex = {2, 0, 2};

std::vector<float> Backward(int64_t padding_idx, bool freq) {
  std::vector<float> grad = kGrad, out(8, 7.0f);  // 7: overwritten
  std::vector<int64_t> index = kIndex;
  EXPECT_TRUE(EmbeddingDenseBackward(View(grad, {3, 2}), View(index, {3}),
                                     padding_idx, freq, View(out, {4, 2}))
                  .ok());
  return out;
}

TEST(EmbeddingDenseBackward, SumsRepeatedRowsAndZeroesTheRest) {
  EXPECT_EQ(Backward(-1, false), (std::vector<float>{3, 4, 0, 0, 6, 8, 0, 0}));
}

TEST(EmbeddingDenseBackward, PaddingRowStaysZero) {
  EXPECT_EQ(Backward(2, false), (std::vector<float>{3, 4, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Backward(0, false), (std::vector<float>{0, 0, 0, 0, 6, 8, 0, 0}));
}

TEST(EmbeddingDenseBackward, ScaleGradByFreqDividesByTheCount) {
  // row 2 occurs twice: (1 + 5) / 2, (2 + 6) / 2.
  EXPECT_EQ(Backward(-1, true), (std::vector<float>{3, 4, 0, 0, 3, 4, 0, 0}));
}

TEST(EmbeddingDenseBackward, Int32Indices) {
  std::vector<float> grad = kGrad, out(8, 7.0f);
  std::vector<int32_t> index = {2, 0, 2};
  ASSERT_TRUE(EmbeddingDenseBackward(View(grad, {3, 2}), Int32View(index), -1,
                                     false, View(out, {4, 2}))
                  .ok());
  EXPECT_EQ(out, (std::vector<float>{3, 4, 0, 0, 6, 8, 0, 0}));
}

TEST(EmbeddingDenseBackward, ThreadsMatchTheSerialSumInIndexOrder) {
  std::mt19937 rng(3);
  const int64_t rows = 1000, d = 67, n = 4000;  // repeats; rows over threads
  std::vector<int64_t> index(n);
  for (int64_t& k : index) k = static_cast<int64_t>(rng() % rows);
  auto grad = Random<double>(n * d, &rng);
  std::vector<double> want(rows * d, 0.0), got(rows * d, 1.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) want[index[i] * d + j] += grad[i * d + j];
  }
  ASSERT_TRUE(EmbeddingDenseBackward(View(grad, {n, d}), View(index, {n}), -1,
                                     false, View(got, {rows, d}))
                  .ok());
  for (int64_t i = 0; i < rows * d; ++i) EXPECT_EQ(got[i], want[i]) << i;
}

TEST(EmbeddingDenseBackward, AnIndexOutOfRangeWritesNothing) {
  for (int64_t bad : {int64_t{4}, int64_t{-1}}) {
    std::vector<float> grad = kGrad, out(8, 7.0f);
    std::vector<int64_t> index = {2, bad, 0};
    absl::Status s = EmbeddingDenseBackward(
        View(grad, {3, 2}), View(index, {3}), -1, false, View(out, {4, 2}));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.message()).find("embedding_backward"),
              std::string::npos)
        << s;
    EXPECT_NE(std::string(s.message()).find(std::to_string(bad)),
              std::string::npos)
        << s;
    EXPECT_EQ(out, std::vector<float>(8, 7.0f));
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tensord
