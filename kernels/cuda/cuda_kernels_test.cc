// kernels/cuda against kernels/cpu on small inputs, plus the status mapping
// of cuda_check.h. The kernel tests skip with "no CUDA device" when
// cudaGetDeviceCount fails; the status tests run on any CUDA build.
#include "gtest/gtest.h"

#if TENSORD_WITH_CUDA
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/batch_norm.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/norm.h"
#include "kernels/cuda/reduce.h"
#include "runtime/core/device_error.h"

namespace tensord {
namespace {

TEST(CudaCheck, MapsErrorsToStatus) {
  EXPECT_TRUE(cuda::ToStatus(cudaSuccess, "x").ok());
  EXPECT_EQ(cuda::ToStatus(cudaErrorMemoryAllocation, "cudaMalloc").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cuda::ToStatus(CUBLAS_STATUS_ALLOC_FAILED, "gemm").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cuda::ToStatus(CUDNN_STATUS_NOT_SUPPORTED, "conv").code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(cuda::ToStatus(cudaErrorInvalidValue, "x").code(),
            absl::StatusCode::kInternal);
  EXPECT_TRUE(cuda::IsStickyError(cudaErrorIllegalAddress));
  EXPECT_TRUE(cuda::IsStickyError(cudaErrorLaunchFailure));
  EXPECT_FALSE(cuda::IsStickyError(cudaErrorMemoryAllocation));
}

absl::Status g_sticky;
void RecordSticky(const absl::Status& s) { g_sticky = s; }

TEST(CudaCheck, StickyErrorsReachTheHandlerOnce) {
  SetStickyErrorHandler(RecordSticky);  // runtime/core/device_error.h
  absl::Status s = cuda::ToStatus(cudaErrorIllegalAddress, "kernel");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(IsStickyDeviceError(s)) << s;
  EXPECT_NE(g_sticky.message().find("cudaErrorIllegalAddress"),
            std::string::npos)
      << g_sticky;
  g_sticky = absl::OkStatus();
  EXPECT_TRUE(
      IsStickyDeviceError(cuda::ToStatus(cudaErrorLaunchFailure, "kernel")));
  EXPECT_TRUE(g_sticky.ok()) << "the handler runs for the first one only";
  EXPECT_FALSE(IsStickyDeviceError(
      cuda::ToStatus(cudaErrorMemoryAllocation, "cudaMalloc")));
  SetStickyErrorHandler(nullptr);
}

class CudaKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      GTEST_SKIP() << "no CUDA device ("
                   << (err != cudaSuccess ? cudaGetErrorString(err)
                                          : "the driver reports none")
                   << ")";
    }
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    for (void* p : buffers_) cudaFree(p);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  // A contiguous device view holding `values` converted to `dtype`.
  StridedView Upload(const std::vector<float>& values, Shape shape,
                     DType dtype) {
    StridedView host = HostView(values, shape);
    StridedView dev = host;
    dev.dtype = dtype;
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, values.size() * 8 + 16), cudaSuccess);
    buffers_.push_back(p);
    StridedView f32 = host;
    f32.data = p;
    EXPECT_EQ(
        cudaMemcpy(p, values.data(), values.size() * 4, cudaMemcpyHostToDevice),
        cudaSuccess);
    if (dtype == DType::kFloat32) return f32;
    void* q = nullptr;
    EXPECT_EQ(cudaMalloc(&q, values.size() * 8 + 16), cudaSuccess);
    buffers_.push_back(q);
    dev.data = q;
    EXPECT_TRUE(cuda::Copy(f32, dev, stream_).ok());
    return dev;
  }
  StridedView Empty(Shape shape, DType dtype) {
    StridedView v = HostView({}, shape);
    v.dtype = dtype;
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, v.numel() * 8 + 16), cudaSuccess);
    buffers_.push_back(p);
    v.data = p;
    return v;
  }
  std::vector<float> Download(const StridedView& v) {
    StridedView f32 = Empty(Shape(v.sizes, v.sizes + v.ndim), DType::kFloat32);
    EXPECT_TRUE(cuda::Copy(v, f32, stream_).ok());
    std::vector<float> out(v.numel());
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), f32.data, out.size() * 4,
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
  }
  static StridedView HostView(const std::vector<float>& values, Shape shape) {
    StridedView v;
    v.data = const_cast<float*>(values.data());
    v.ndim = static_cast<int>(shape.size());
    int64_t stride = 1;
    for (int d = v.ndim - 1; d >= 0; --d) {
      v.sizes[d] = shape[d];
      v.strides[d] = stride;
      stride *= shape[d];
    }
    return v;
  }

  // `values` in a host buffer of `dtype` (float32/float64/int64) that the
  // fixture keeps: the CPU kernels' side of a comparison.
  StridedView Host(const std::vector<float>& values, Shape shape, DType dtype) {
    StridedView v = HostView(values, shape);
    host_.emplace_back(values.size() + 1);
    v.data = host_.back().data();
    v.dtype = dtype;
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == DType::kFloat32) v.ptr<float>()[i] = values[i];
      if (dtype == DType::kFloat64) v.ptr<double>()[i] = values[i];
      if (dtype == DType::kInt64) v.ptr<int64_t>()[i] = values[i];
    }
    return v;
  }
  static std::vector<float> HostValues(const StridedView& v) {
    std::vector<float> out(v.numel());
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = v.dtype == DType::kFloat32
                   ? v.ptr<float>()[i]
                   : static_cast<float>(v.ptr<double>()[i]);
    }
    return out;
  }
  // Host and device views of the same values, in `dtype`.
  std::pair<StridedView, StridedView> Both(const std::vector<float>& values,
                                           Shape shape, DType dtype) {
    return {Host(values, shape, dtype), Upload(values, shape, dtype)};
  }
  // An output on both sides; Check compares them.
  std::pair<StridedView, StridedView> Out(Shape shape, DType dtype) {
    return {Host(std::vector<float>(ShapeNumel(shape)), shape, dtype),
            Empty(shape, dtype)};
  }
  void Check(const std::pair<StridedView, StridedView>& o, double tol,
             const std::string& what) {
    const auto want = HostValues(o.first), got = Download(o.second);
    ASSERT_EQ(want.size(), got.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "]";
      } else {
        EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i])))
            << what << " [" << i << "]";
      }
    }
  }
  static int64_t ShapeNumel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  }
  static std::vector<float> Randn(int64_t n, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist;
    std::vector<float> v(n);
    for (float& x : v) x = dist(gen);
    return v;
  }

  cudaStream_t stream_ = nullptr;
  std::vector<void*> buffers_;
  std::vector<std::vector<double>> host_;
};

TEST_F(CudaKernelsTest, CastRoundTripsThroughHalfTypes) {
  // Exact in every type: bfloat16 keeps 8 significant bits (1e4 would round
  // to 9984), float16 11 bits and a range to 65504.
  const std::vector<float> x = {1.5f, -2.25f, 3.0f, 0.125f, 12288.0f, -7.0f};
  for (DType d :
       {DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt32}) {
    const auto y = Download(Upload(x, {2, 3}, d));
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(y[i], d == DType::kInt32 ? std::trunc(x[i]) : x[i])
          << DTypeName(d) << " [" << i << "]";
    }
  }
}

TEST_F(CudaKernelsTest, BroadcastBinaryMatchesCpu) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30};
  StridedView da = Upload(a, {2, 3}, DType::kFloat32);
  StridedView db = Upload(b, {1, 3}, DType::kFloat32);
  db.sizes[0] = 2;
  db.strides[0] = 0;  // broadcast
  StridedView out = Empty({2, 3}, DType::kFloat32);
  ASSERT_TRUE(
      cuda::Binary(cuda::BinaryOp::kSub, da, db, 0.5, out, stream_).ok());
  const auto y = Download(out);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], a[i] - 0.5f * b[i % 3]);
}

TEST_F(CudaKernelsTest, ReductionsMatchCpu) {
  std::vector<float> x(3 * 1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.01 * i);
  StridedView dx = Upload(x, {3, 1000}, DType::kFloat32);
  const bool over_cols[2] = {false, true};
  for (auto op :
       {cuda::ReduceOp::kSum, cuda::ReduceOp::kMax, cuda::ReduceOp::kMean}) {
    StridedView out = Empty({3, 1}, DType::kFloat32);
    ASSERT_TRUE(cuda::Reduce(op, dx, over_cols, out, stream_).ok());
    std::vector<float> want(3);
    StridedView host_out = HostView(want, {3, 1});
    ASSERT_TRUE(
        cpu::Reduce(op, HostView(x, {3, 1000}), over_cols, host_out).ok());
    const auto got = Download(out);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], want[i], 1e-3);
  }
}

TEST_F(CudaKernelsTest, GemmOfTransposedOperands) {
  // a = [[1, 2], [3, 4]] stored column-major; b = identity.
  StridedView a = Upload({1, 3, 2, 4}, {1, 2, 2}, DType::kFloat32);
  std::swap(a.strides[1], a.strides[2]);
  StridedView b = Upload({1, 0, 0, 1}, {1, 2, 2}, DType::kFloat32);
  StridedView out = Empty({1, 2, 2}, DType::kFloat32);
  ASSERT_TRUE(cuda::BatchedMatmul(a, b, out, false, stream_).ok());
  EXPECT_EQ(Download(out), (std::vector<float>{1, 2, 3, 4}));
}

// Note [Half GEMM]: half operands straight into cuBLAS (no float32 copies),
// one of them transposed, against a float reference on the rounded inputs.
TEST_F(CudaKernelsTest, HalfGemmMatchesFloatReference) {
  const int64_t batch = 2, m = 33, k = 40, n = 17;
  std::vector<float> x(batch * m * k), y(batch * n * k);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * i);
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::cos(0.21 * i);
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    StridedView a = Upload(x, {batch, m, k}, d);
    // b is [batch, k, n] read through a transpose of a contiguous
    // [batch, n, k]: column-major matrices, cuBLAS op T.
    StridedView b = Upload(y, {batch, n, k}, d);
    std::swap(b.sizes[1], b.sizes[2]);
    std::swap(b.strides[1], b.strides[2]);
    StridedView out = Empty({batch, m, n}, d);
    ASSERT_TRUE(cuda::BatchedMatmul(a, b, out, false, stream_).ok())
        << DTypeName(d);
    const std::vector<float> ha = Download(a), hb = Download(b);
    const std::vector<float> got = Download(out);
    const double tol = d == DType::kFloat16 ? 2e-3 : 1.6e-2;
    for (int64_t p = 0; p < batch; ++p) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, scale = 0;
          for (int64_t q = 0; q < k; ++q) {
            const double prod =
                double{ha[(p * m + i) * k + q]} * hb[(p * k + q) * n + j];
            want += prod;
            scale += std::fabs(prod);
          }
          EXPECT_NEAR(got[(p * m + i) * n + j], want, tol * (1 + scale))
              << DTypeName(d) << " [" << p << ", " << i << ", " << j << "]";
        }
      }
    }
  }
}

// The fused training kernels (norm.h, loss.h, GeluBackward) against the CPU
// kernels they mirror, on random inputs: several shapes incl. empty batches,
// optional parameters, float32 and float64.
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

TEST(CudaKernels, Skipped) { GTEST_SKIP() << "built without the CUDA toolkit"; }

#endif  // TENSORD_WITH_CUDA
