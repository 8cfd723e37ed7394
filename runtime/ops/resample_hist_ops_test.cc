// _trilinear, _upsample_bilinear2d_aa (and its backward) and the histogramdd
// rows through the op table on the CPU, against values worked out by hand:
// bilinear's x1^T W_o x2 per output; the triangle filter's taps when
// halving a row of 4 (scale 2, support 2: weights 3/7, 3/7, 1/7) and when
// doubling a row of 2 (support 1: linear interpolation); points on bin
// edges falling right, the last edge closing the last bin; misshapen calls
// are INVALID_ARGUMENT. Against PyTorch: tests/python/op_cases_resample.py.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using I = std::vector<int64_t>;
using V = std::vector<double>;
constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

class ResampleHistOpsTest : public CpuOpTest {
 protected:
  Tensor F64(const V& v, const Shape& s) { return From(v, DType::kFloat64, s); }
  void ExpectNear(const Tensor& t, const V& want) {
    const V got = Doubles(t);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-12) << "at " << i;
    }
  }
  AttrMap Bilinear(int64_t unroll) {
    return {{"expand1", I{1, 3}},
            {"expand2", I{0}},
            {"expand3", I{1, 2}},
            {"sumdim", I{2, 3}},
            {"unroll_dim", unroll}};
  }
};

TEST_F(ResampleHistOpsTest, TrilinearIsBilinearsSumOfProducts) {
  // x1 = [1, 2], x2 = [3, 4]; W_0 = I gives 1*3 + 2*4 = 11, W_1 = [[0, 1],
  // [2, 0]] gives x1 . (W_1 x2) = x1 . [4, 6] = 16; any unroll_dim.
  const Tensor x1 = F64({1, 2}, {1, 2}), x2 = F64({3, 4}, {1, 2});
  const Tensor w = F64({1, 0, 0, 1, 0, 1, 2, 0}, {2, 2, 2});
  for (int64_t unroll : {0, 1, 2, 3}) {
    const Tensor out = Run1("_trilinear", {x1, w, x2}, Bilinear(unroll));
    EXPECT_EQ(out.shape(), Shape({1, 2}));
    ExpectNear(out, {11, 16});
  }
}

TEST_F(ResampleHistOpsTest, TrilinearRefusesBadDimLists) {
  const Tensor x1 = F64({1, 2}, {1, 2}), w = F64(V(8, 1.0), {2, 2, 2});
  auto code = [&](AttrMap a, Tensor x2) {
    return Run("_trilinear", {x1, w, x2}, std::move(a)).status().code();
  };
  const Tensor x2 = F64({3, 4}, {1, 2});
  EXPECT_EQ(code(Bilinear(4), x2), kInvalid);  // unroll_dim past the rank
  AttrMap twice = Bilinear(1);
  twice["sumdim"] = I{2, -2};  // the same dim twice
  EXPECT_EQ(code(twice, x2), kInvalid);
  EXPECT_EQ(code(Bilinear(1), F64({3, 4, 5}, {1, 3})), kInvalid);  // 3 vs 2
}

TEST_F(ResampleHistOpsTest, AntialiasedHalvingAndItsGradient) {
  // Output 0: centre 1, inputs 0..2 at distances 0.5, 0.5, 1.5 (over the
  // scale 2): triangle weights 0.75, 0.75, 0.25, normalised to 3/7, 3/7,
  // 1/7. Output 1: centre 3, inputs 1..3: 1/7, 3/7, 3/7.
  const Tensor x = F64({1, 2, 3, 4}, {1, 1, 1, 4});
  const AttrMap a = {{"output_size", I{1, 2}}};
  const Tensor y = Run1("_upsample_bilinear2d_aa", {x}, a);
  EXPECT_EQ(y.shape(), Shape({1, 1, 1, 2}));
  ExpectNear(y, {12 / 7.0, 23 / 7.0});
  AttrMap b = a;
  b["input_size"] = I{1, 1, 1, 4};
  const Tensor g =
      Run1("_upsample_bilinear2d_aa_backward", {F64({1, 10}, {1, 1, 1, 2})}, b);
  ExpectNear(g, {3 / 7.0, 13 / 7.0, 31 / 7.0, 30 / 7.0});
}

TEST_F(ResampleHistOpsTest, AntialiasedDoublingIsLinearInterpolation) {
  // Scale 0.5: support 1, centres 0.25, 0.75, 1.25, 1.75.
  const Tensor y =
      Run1("_upsample_bilinear2d_aa", {F64({2, 6, -1, 1}, {1, 2, 1, 2})},
           {{"output_size", I{1, 4}}});
  ExpectNear(y, {2, 3, 5, 6, -1, -0.5, 0.5, 1});
}

TEST_F(ResampleHistOpsTest, AntialiasRefusesBadShapes) {
  auto code = [&](const std::string& op, Tensor t, AttrMap a) {
    return Run(op, {t}, std::move(a)).status().code();
  };
  EXPECT_EQ(code("_upsample_bilinear2d_aa", F64(V(4, 1.0), {1, 4}),
                 {{"output_size", I{1, 2}}}),
            kInvalid);  // not 4-d
  EXPECT_EQ(code("_upsample_bilinear2d_aa", F64(V(4, 1.0), {1, 1, 1, 4}),
                 {{"output_size", I{0, 2}}}),
            kInvalid);
  EXPECT_EQ(
      code("_upsample_bilinear2d_aa_backward", F64(V(3, 1.0), {1, 1, 1, 3}),
           {{"output_size", I{1, 2}}, {"input_size", I{1, 1, 1, 4}}}),
      kInvalid);  // grad_output is not the output's shape
}

// Points (0, 0), (3, 4), (2, 1), (4, 2): with 2 bins over [0, 4] per dim
// (edges 0, 2, 4), (2, 1) falls in bin (1, 0) and (3, 4) in the last bin.
class HistogramddOpsTest : public ResampleHistOpsTest {
 protected:
  Tensor Points() { return F64({0, 0, 3, 4, 2, 1, 4, 2}, {4, 2}); }
};

TEST_F(HistogramddOpsTest, BinEdgesSpanTheData) {
  auto r = Run("_histogramdd_bin_edges", {Points()}, {{"bins", I{2, 3}}});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  ExpectNear((*r)[0], {0, 2, 4});
  ExpectNear((*r)[1], {0, 4 / 3.0, 8 / 3.0, 4});
}

TEST_F(HistogramddOpsTest, CountsWeightsAndDensity) {
  const AttrMap bins = {{"bins", I{2, 2}}};
  ExpectNear(Run1("_histogramdd_from_bin_cts", {Points()}, bins), {1, 0, 1, 2});
  ExpectNear(Run1("_histogramdd_from_bin_cts",
                  {Points(), F64({1, 2, 3, 4}, {4})}, bins),
             {1, 0, 3, 6});
  AttrMap density = bins;
  density["density"] = true;  // over 4 points and bins of area 2 * 2
  ExpectNear(Run1("_histogramdd_from_bin_cts", {Points()}, density),
             {1 / 16.0, 0, 1 / 16.0, 2 / 16.0});
  // range [0, 8] x [0, 4], bins 2 x 1: only (4, 2) reaches the second bin.
  ExpectNear(Run1("_histogramdd_from_bin_cts", {Points()},
                  {{"bins", I{2, 1}}, {"range", V{0, 8, 0, 4}}}),
             {3, 1});
}

TEST_F(HistogramddOpsTest, GivenEdgesBinBySearch) {
  // Edges [0, 1, 5] and [-1, 3, 4]: (4, 2) -> (1, 0), (3, 4) -> (1, 1).
  ExpectNear(Run1("_histogramdd_from_bin_tensors",
                  {Points(), F64({0, 1, 5}, {3}), F64({-1, 3, 4}, {3})}),
             {1, 0, 2, 1});
}

TEST_F(HistogramddOpsTest, RefusesBadCallsAndNonFiniteRanges) {
  auto code = [&](const std::string& op, std::vector<Tensor> in, AttrMap a) {
    return Run(op, std::move(in), std::move(a)).status().code();
  };
  const std::string cts = "_histogramdd_from_bin_cts";
  EXPECT_EQ(code(cts, {Points()}, {{"bins", I{2}}}), kInvalid);
  EXPECT_EQ(code(cts, {Points()}, {{"bins", I{2, 0}}}), kInvalid);
  EXPECT_EQ(code(cts, {Points()}, {{"bins", I{2, 2}}, {"range", V{0, 1}}}),
            kInvalid);
  EXPECT_EQ(code(cts, {Points(), F64({1, 2}, {2})}, {{"bins", I{2, 2}}}),
            kInvalid);  // weight of the wrong shape
  EXPECT_EQ(
      code(cts, {F64({0, std::nan(""), 1, 1}, {2, 2})}, {{"bins", I{2, 2}}}),
      kInvalid);  // NaN: the data's range is not finite
  EXPECT_EQ(
      code(cts, {Points()}, {{"bins", I{2, 2}}, {"range", V{1, 0, 0, 1}}}),
      kInvalid);  // min above max
  EXPECT_EQ(code("_histogramdd_from_bin_tensors",
                 {Points(), F64({0}, {1}), F64({0, 1}, {2})}, {}),
            kInvalid);  // one edge: no bin
}

}  // namespace
}  // namespace tensord
