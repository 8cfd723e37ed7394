// _embedding_bag and its backward rows through the op table on the CPU,
// against sums, means and maxima worked out from the rows picked: bags from
// offsets (an empty one is zeros), padding skipped and left out of a mean's
// count, include_last_offset, per-sample weights and their gradient, the
// weight gradient of each mode; bad offsets and indices are
// INVALID_ARGUMENT. Against PyTorch: tests/python/test_nn_embedding_bag.py.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using I = std::vector<int64_t>;

// weight[r][d] = 10 r + d: a picked row is recognisable in any sum.
class EmbeddingBagOpsTest : public CpuOpTest {
 protected:
  static constexpr int64_t kRows = 5, kDim = 3;
  Tensor Weight() {
    std::vector<double> w;
    for (int64_t r = 0; r < kRows; ++r) {
      for (int64_t d = 0; d < kDim; ++d) w.push_back(10.0 * r + d);
    }
    return From(w, DType::kFloat64, {kRows, kDim});
  }
  Tensor Idx(const I& v) {
    return From(v, DType::kInt64, {static_cast<int64_t>(v.size())});
  }
  static double W(int64_t r, int64_t d) { return 10.0 * r + d; }
};

// Bags of indices {1, 4, 4 | (empty) | 2, 0}.
const I kIndices = {1, 4, 4, 2, 0};
const I kOffsets = {0, 3, 3};

TEST_F(EmbeddingBagOpsTest, SumMeanMaxOfEachBag) {
  for (int64_t mode = 0; mode < 3; ++mode) {
    auto r = Run("_embedding_bag", {Weight(), Idx(kIndices), Idx(kOffsets)},
                 {{"mode", mode}});
    ASSERT_TRUE(r.ok()) << r.status();
    const auto out = Doubles((*r)[0]);
    ASSERT_EQ(out.size(), 9u);
    for (int64_t d = 0; d < kDim; ++d) {
      const double bag0[] = {W(1, d) + 2 * W(4, d), (W(1, d) + 2 * W(4, d)) / 3,
                             W(4, d)};
      const double bag2[] = {W(2, d) + W(0, d), (W(2, d) + W(0, d)) / 2,
                             W(2, d)};
      EXPECT_DOUBLE_EQ(out[d], bag0[mode]) << mode;
      EXPECT_DOUBLE_EQ(out[kDim + d], 0.0) << mode;  // the empty bag
      EXPECT_DOUBLE_EQ(out[2 * kDim + d], bag2[mode]) << mode;
    }
    EXPECT_EQ(Ints64((*r)[1]), (I{0, 0, 0, 2, 2}));  // offset2bag
    EXPECT_EQ(Ints64((*r)[2]), (I{3, 0, 2}));        // bag_size
    if (mode == 2) {
      EXPECT_EQ(Ints64((*r)[3]), (I{4, 4, 4, -1, -1, -1, 2, 2, 2}));
    } else {
      EXPECT_EQ((*r)[3].numel(), 0);
    }
  }
}

TEST_F(EmbeddingBagOpsTest, PaddingIsLeftOutOfTheBagAndItsCount) {
  const Tensor out =
      Run1("_embedding_bag", {Weight(), Idx(kIndices), Idx(kOffsets)},
           {{"mode", int64_t{1}}, {"padding_idx", int64_t{4}}});
  const auto v = Doubles(out);
  for (int64_t d = 0; d < kDim; ++d) EXPECT_DOUBLE_EQ(v[d], W(1, d));
}

TEST_F(EmbeddingBagOpsTest, IncludeLastOffsetEndsTheLastBagThere) {
  auto r = Run("_embedding_bag", {Weight(), Idx(kIndices), Idx({0, 1, 4})},
               {{"include_last_offset", true}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].shape(), (Shape{2, kDim}));
  const auto v = Doubles((*r)[0]);
  for (int64_t d = 0; d < kDim; ++d) {
    EXPECT_DOUBLE_EQ(v[kDim + d], 2 * W(4, d) + W(2, d));  // not index 0
  }
  EXPECT_EQ(Ints64((*r)[1]), (I{0, 1, 1, 1, -1}));
}

TEST_F(EmbeddingBagOpsTest, PerSampleWeightsScaleRowsAndGetTheirGradient) {
  const std::vector<double> psw = {0.5, -1, 2, 3, 0.25};
  const Tensor p = From(psw, DType::kFloat64, {5});
  auto r = Run("_embedding_bag", {Weight(), Idx(kIndices), Idx(kOffsets), p});
  ASSERT_TRUE(r.ok()) << r.status();
  const auto out = Doubles((*r)[0]);
  for (int64_t d = 0; d < kDim; ++d) {
    EXPECT_DOUBLE_EQ(out[d], 0.5 * W(1, d) + (2 - 1) * W(4, d));
  }
  // d(sum(out * g)) / d psw[i] = g[bag(i)] . weight[index i]; g = all ones.
  std::vector<double> ones(9, 1.0);
  const Tensor g = From(ones, DType::kFloat64, {3, kDim});
  const auto gp = Doubles(Run1(
      "_embedding_bag_per_sample_weights_backward",
      {g, Weight(), Idx(kIndices), Idx(kOffsets), (*r)[1]}));
  for (size_t i = 0; i < kIndices.size(); ++i) {
    double dot = 0;
    for (int64_t d = 0; d < kDim; ++d) dot += W(kIndices[i], d);
    EXPECT_DOUBLE_EQ(gp[i], dot) << i;
  }
}

TEST_F(EmbeddingBagOpsTest, DenseBackwardOfEachMode) {
  std::vector<double> gv;  // g[b][d] = b + 1 + d / 10
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t d = 0; d < kDim; ++d) gv.push_back(b + 1 + d / 10.0);
  }
  const Tensor g = From(gv, DType::kFloat64, {3, kDim});
  for (int64_t mode = 0; mode < 3; ++mode) {
    auto fwd = Run("_embedding_bag", {Weight(), Idx(kIndices), Idx(kOffsets)},
                   {{"mode", mode}});
    ASSERT_TRUE(fwd.ok()) << fwd.status();
    const auto gw = Doubles(Run1(
        "_embedding_bag_dense_backward",
        {g, Idx(kIndices), (*fwd)[1], (*fwd)[2], (*fwd)[3]},
        {{"num_weights", kRows}, {"mode", mode}}));
    ASSERT_EQ(gw.size(), static_cast<size_t>(kRows * kDim));
    for (int64_t d = 0; d < kDim; ++d) {
      const double g0 = gv[d], g2 = gv[2 * kDim + d];
      // rows 1, 4, 4 in bag 0; 2, 0 in bag 2; row 3 in none.
      const double want[3][kRows] = {
          {g2, g0, g2, 0, 2 * g0},
          {g2 / 2, g0 / 3, g2 / 2, 0, 2 * g0 / 3},
          {0, 0, g2, 0, g0}};  // max: row 4 wins bag 0, row 2 bag 2
      for (int64_t row = 0; row < kRows; ++row) {
        EXPECT_NEAR(gw[row * kDim + d], want[mode][row], 1e-12)
            << "mode " << mode << " row " << row << " d " << d;
      }
    }
  }
}

TEST_F(EmbeddingBagOpsTest, RefusesBadOffsetsIndicesAndArguments) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  auto code = [&](const I& idx, const I& off, AttrMap a = {}) {
    return Run("_embedding_bag", {Weight(), Idx(idx), Idx(off)}, std::move(a))
        .status()
        .code();
  };
  EXPECT_EQ(code(kIndices, {1, 3}), kInvalid);     // offsets[0] != 0
  EXPECT_EQ(code(kIndices, {0, 3, 2}), kInvalid);  // decreasing
  EXPECT_EQ(code(kIndices, {0, 6}), kInvalid);     // past the end
  EXPECT_EQ(code({0, 5}, {0}), kInvalid);          // index out of range
  EXPECT_EQ(code({0, -1}, {0}), kInvalid);
  EXPECT_EQ(code(kIndices, {0}, {{"mode", int64_t{3}}}), kInvalid);
  EXPECT_EQ(code(kIndices, {}, {{"include_last_offset", true}}), kInvalid);
  const Tensor p = From(std::vector<double>(5, 1.0), DType::kFloat64, {5});
  EXPECT_EQ(Run("_embedding_bag", {Weight(), Idx(kIndices), Idx({0}), p},
                {{"mode", int64_t{1}}})
                .status()
                .code(),
            kInvalid);  // per_sample_weights outside sum mode
  std::vector<double> gv(3, 1.0);
  EXPECT_EQ(Run("_embedding_bag_dense_backward",
                {From(gv, DType::kFloat64, {1, 3}), Idx({7}), Idx({0}),
                 Idx({1}), Idx({})},
                {{"num_weights", kRows}})
                .status()
                .code(),
            kInvalid);  // an index past num_weights
}

}  // namespace
}  // namespace tensord
