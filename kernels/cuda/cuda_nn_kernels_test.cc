// kernels/cuda's fused training kernels (layer norm, batch norm, cross
// entropy, gelu's backward) against kernels/cpu's on random inputs; skip
// with "no CUDA device" without a GPU.
#include "gtest/gtest.h"

#if TENSORD_WITH_CUDA
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/batch_norm.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cuda/cuda_kernels_test_fixture.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/norm.h"

namespace tensord {
namespace {

using cuda_testing::CudaKernelsTest;

TEST_F(CudaKernelsTest, LayerNormMatchesCpu) {
  const std::pair<int64_t, int64_t> shapes[] = {
      {3, 7}, {5, 300}, {0, 8}, {2, 1000}};
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    const double tol = d == DType::kFloat32 ? 1e-4 : 1e-6;
    for (auto [m, n] : shapes) {
      for (bool params : {false, true}) {
        const std::string what = std::string(DTypeName(d)) + " [" +
                                 std::to_string(m) + ", " + std::to_string(n) +
                                 (params ? "] weight, bias" : "]");
        auto x = Both(Randn(m * n, 1), {m, n}, d);
        auto w = Both(Randn(n, 2), {n}, d), b = Both(Randn(n, 3), {n}, d);
        auto dy = Both(Randn(m * n, 4), {m, n}, d);
        if (!params) w = b = {StridedView{}, StridedView{}};
        auto y = Out({m, n}, d), mean = Out({m}, d), rstd = Out({m}, d);
        ASSERT_TRUE(cpu::LayerNormForward(x.first, m, n, w.first, b.first, 1e-5,
                                          y.first, mean.first, rstd.first)
                        .ok());
        ASSERT_TRUE(cuda::LayerNormForward(x.second, m, n, w.second, b.second,
                                           1e-5, y.second, mean.second,
                                           rstd.second, stream_)
                        .ok());
        Check(y, tol, what + " y");
        Check(mean, tol, what + " mean");
        Check(rstd, tol, what + " rstd");
        auto dx = Out({m, n}, d), dw = Out({n}, d), db = Out({n}, d);
        ASSERT_TRUE(cpu::LayerNormBackward(dy.first, x.first, m, n, mean.first,
                                           rstd.first, w.first, dx.first,
                                           dw.first, db.first)
                        .ok());
        ASSERT_TRUE(cuda::LayerNormBackward(
                        dy.second, x.second, m, n, mean.second, rstd.second,
                        w.second, dx.second, dw.second, db.second, stream_)
                        .ok());
        Check(dx, tol, what + " dx");
        Check(dw, tol, what + " dweight");  // zeros for no rows
        Check(db, tol, what + " dbias");
      }
    }
  }
}

// Training batch norm (eval mode and the running statistics are the
// batch_norm composite's, norm_ops.cc: cuda_op_table_test covers them).
TEST_F(CudaKernelsTest, BatchNormMatchesCpu) {
  const Shape shapes[] = {{4, 3, 5}, {5, 3}, {2, 4, 3, 3}, {64, 2, 17}};
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    const double tol = d == DType::kFloat32 ? 1e-4 : 1e-6;
    for (const Shape& shape : shapes) {
      for (bool params : {false, true}) {
        const std::string what = std::string(DTypeName(d)) + " " +
                                 std::to_string(shape.size()) + "-d, " +
                                 std::to_string(ShapeNumel(shape)) +
                                 (params ? " weight, bias" : "");
        const int64_t c = shape[1], numel = ShapeNumel(shape);
        auto x = Both(Randn(numel, 5), shape, d);
        auto dy = Both(Randn(numel, 6), shape, d);
        auto w = Both(Randn(c, 7), {c}, d), b = Both(Randn(c, 8), {c}, d);
        if (!params) w = b = {StridedView{}, StridedView{}};
        auto y = Out(shape, d), mean = Out({c}, d), var = Out({c}, d);
        ASSERT_TRUE(cpu::BatchNormForward(x.first, w.first, b.first, 1e-5,
                                          y.first, mean.first, var.first)
                        .ok());
        ASSERT_TRUE(cuda::BatchNormForward(x.second, w.second, b.second, 1e-5,
                                           y.second, mean.second, var.second,
                                           stream_)
                        .ok());
        Check(y, tol, what + " y");
        Check(mean, tol, what + " mean");
        Check(var, tol, what + " var");
        auto dx = Out(shape, d), dw = Out({c}, d), db = Out({c}, d);
        ASSERT_TRUE(cpu::BatchNormBackward(dy.first, x.first, mean.first,
                                           var.first, w.first, 1e-5, dx.first,
                                           dw.first, db.first)
                        .ok());
        ASSERT_TRUE(cuda::BatchNormBackward(
                        dy.second, x.second, mean.second, var.second, w.second,
                        1e-5, dx.second, dw.second, db.second, stream_)
                        .ok());
        Check(dx, tol, what + " dx");
        Check(dw, tol, what + " dweight");
        Check(db, tol, what + " dbias");
      }
    }
  }
}

// Every reduction, with ignored targets, label smoothing, class weights and
// log_probs; no positions (mean: 0/0 = NaN as the CPU); a bad target.
TEST_F(CudaKernelsTest, CrossEntropyMatchesCpu) {
  struct Dims {
    int64_t n, c, s;
  };
  const Dims dims[] = {{6, 5, 1}, {2, 4, 3}, {0, 3, 1}, {4, 700, 1}};
  const cpu::LossReduction reductions[] = {cpu::LossReduction::kNone,
                                           cpu::LossReduction::kMean,
                                           cpu::LossReduction::kSum};
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    const double tol = d == DType::kFloat32 ? 1e-4 : 1e-6;
    for (Dims dm : dims)
      for (cpu::LossReduction r : reductions)
        for (double smoothing : {0.0, 0.2})
          for (int variant = 0; variant < 3;
               ++variant) {  // -, weight, log_probs
            cpu::CrossEntropyGeometry g{dm.n,      dm.c, dm.s,        -100,
                                        smoothing, r,    variant == 2};
            const cuda::CrossEntropyGeometry cg{
                g.n,
                g.c,
                g.s,
                g.ignore_index,
                g.label_smoothing,
                static_cast<cuda::LossReduction>(r),
                g.log_probs};
            const int64_t rows = g.n * g.s;
            const std::string what =
                std::string(DTypeName(d)) + " n" + std::to_string(g.n) + " c" +
                std::to_string(g.c) + " s" + std::to_string(g.s) + " r" +
                std::to_string(static_cast<int>(r)) + " e" +
                std::to_string(smoothing) + " v" + std::to_string(variant);
            std::vector<float> t(rows);
            for (int64_t i = 0; i < rows; ++i)
              t[i] = i % 4 == 3 ? -100 : (i * 7) % g.c;
            const Shape xs = {g.n, g.c, g.s}, ts = {g.n, g.s};
            auto x = Both(Randn(rows * g.c, 9), xs, d);
            auto target = Both(t, ts, DType::kInt64);
            std::pair<StridedView, StridedView> w;  // none: empty views
            if (variant == 1) {                     // positive class weights
              std::vector<float> pw = Randn(g.c, 10);
              for (float& v : pw) v = std::fabs(v) + 0.1f;
              w = Both(pw, {g.c}, d);
            }
            const Shape ls = r == cpu::LossReduction::kNone ? ts : Shape{};
            auto loss = Out(ls, d), lse = Out(ts, d), total = Out({}, d);
            ASSERT_TRUE(cpu::CrossEntropyForward(x.first, target.first, w.first,
                                                 g, loss.first, lse.first,
                                                 total.first)
                            .ok());
            StridedView scratch = Empty({rows + 1}, DType::kFloat64);
            StridedView bad = Empty({1}, DType::kInt64);
            ASSERT_TRUE(cuda::ResetBadTarget(bad.ptr<int64_t>(), stream_).ok());
            ASSERT_TRUE(cuda::CrossEntropyForward(
                            x.second, target.second, w.second, cg, loss.second,
                            lse.second, total.second, scratch.ptr<double>(),
                            bad.ptr<int64_t>(), stream_)
                            .ok());
            EXPECT_EQ(Download(bad)[0], -1) << what;
            Check(loss, tol, what + " loss");
            Check(lse, tol, what + " lse");
            Check(total, tol, what + " total weight");
            auto grad = Both(Randn(ShapeNumel(ls), 11), ls, d);
            auto dx = Out(xs, d);
            ASSERT_TRUE(cpu::CrossEntropyBackward(
                            grad.first, x.first, target.first, w.first,
                            lse.first, total.first, g, dx.first)
                            .ok());
            ASSERT_TRUE(cuda::CrossEntropyBackward(
                            grad.second, x.second, target.second, w.second,
                            lse.second, total.second, cg, dx.second, stream_)
                            .ok());
            Check(dx, tol, what + " dx");
          }
  }
  // Targets 9 (position 1) and -3 (position 3) for 5 classes: the smallest
  // bad position is flagged, as the runtime reports it.
  const cuda::CrossEntropyGeometry g{
      4, 5, 1, -100, 0.0, cuda::LossReduction::kMean, false};
  StridedView x = Upload(Randn(20, 12), {4, 5}, DType::kFloat32);
  StridedView t = Upload({1, 9, -100, -3}, {4}, DType::kInt64);
  StridedView loss = Empty({}, DType::kFloat32),
              lse = Empty({4}, DType::kFloat32);
  StridedView total = Empty({}, DType::kFloat32);
  StridedView scratch = Empty({4}, DType::kFloat64),
              bad = Empty({1}, DType::kInt64);
  ASSERT_TRUE(cuda::ResetBadTarget(bad.ptr<int64_t>(), stream_).ok());
  ASSERT_TRUE(cuda::CrossEntropyForward(x, t, StridedView{}, g, loss, lse,
                                        total, scratch.ptr<double>(),
                                        bad.ptr<int64_t>(), stream_)
                  .ok());
  EXPECT_EQ(Download(bad)[0], 1);
}

TEST_F(CudaKernelsTest, GeluBackwardMatchesCpu) {
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    for (bool tanh : {false, true}) {
      std::vector<float> xv = Randn(1001, 13);
      xv[0] = 0, xv[1] = 12, xv[2] = -12;  // saturated tails
      auto x = Both(xv, {7, 143}, d), dy = Both(Randn(1001, 14), {7, 143}, d);
      auto dx = Out({7, 143}, d);
      ASSERT_TRUE(
          cpu::GeluBackward(dy.first, x.first, 1001, tanh, dx.first).ok());
      ASSERT_TRUE(
          cuda::GeluBackward(dy.second, x.second, tanh, dx.second, stream_)
              .ok());
      Check(dx, d == DType::kFloat32 ? 1e-5 : 1e-12,
            std::string(DTypeName(d)) + (tanh ? " tanh" : " exact"));
    }
  }
}

}  // namespace
}  // namespace tensord

#else  // !TENSORD_WITH_CUDA

TEST(CudaNnKernels, Skipped) {
  GTEST_SKIP() << "built without the CUDA toolkit";
}

#endif  // TENSORD_WITH_CUDA
