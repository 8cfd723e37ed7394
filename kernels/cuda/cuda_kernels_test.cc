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

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels_test_fixture.h"
#include "kernels/cuda/elementwise.h"
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

using cuda_testing::CudaKernelsTest;

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

// Bool operands: max/fmax are or, min/fmin and, sign is the identity (as
// PyTorch and the CPU kernels).
TEST_F(CudaKernelsTest, BoolMapsAreLogicalOps) {
  StridedView a = Upload({1, 1, 0, 0}, {4}, DType::kBool);
  StridedView b = Upload({1, 0, 1, 0}, {4}, DType::kBool);
  const std::vector<float> kOr = {1, 1, 1, 0}, kAnd = {1, 0, 0, 0};
  for (auto [op, want] : {std::pair{cuda::BinaryOp::kMax, kOr},
                          std::pair{cuda::BinaryOp::kFmax, kOr},
                          std::pair{cuda::BinaryOp::kMin, kAnd},
                          std::pair{cuda::BinaryOp::kFmin, kAnd}}) {
    StridedView out = Empty({4}, DType::kBool);
    ASSERT_TRUE(cuda::Binary(op, a, b, 1, out, stream_).ok());
    EXPECT_EQ(Download(out), want) << static_cast<int>(op);
  }
  StridedView out = Empty({4}, DType::kBool);
  ASSERT_TRUE(cuda::Unary(cuda::UnaryOp::kSign, a, out, stream_).ok());
  EXPECT_EQ(Download(out), (std::vector<float>{1, 1, 0, 0}));
}

// Ai (runtime/core/airy_math.h) on each of its three branches, their edges
// (+-2.09), far out (-1e4, 100) and the special values, in float64 against
// the CPU kernel: libdevice's sin/cos/exp/sqrt against glibc's.
TEST_F(CudaKernelsTest, AiryMatchesCpuOnEveryBranch) {
  std::vector<double> x = {-10000, -1234.5, -100,    -30.25,   -9.5,      -5,
                           -2.5,   -2.09,   -2.0899, -1,       -0.25,     0,
                           0.5,    1.75,    2.0899,  2.09,     3,         8.5,
                           20,     100,     104,     INFINITY, -INFINITY, NAN};
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<double> want(n), got(n);
  const StridedView in =
      cuda_testing::ContiguousView(x.data(), {n}, DType::kFloat64);
  ASSERT_TRUE(cpu::Unary(cpu::UnaryOp::kAiryAi, in,
                         cuda_testing::ContiguousView(want.data(), {n},
                                                      DType::kFloat64))
                  .ok());
  StridedView dx = Empty({n}, DType::kFloat64);
  ASSERT_EQ(cudaMemcpy(dx.data, x.data(), n * 8, cudaMemcpyHostToDevice),
            cudaSuccess);
  StridedView dy = Empty({n}, DType::kFloat64);
  ASSERT_TRUE(cuda::Unary(cuda::UnaryOp::kAiryAi, dx, dy, stream_).ok());
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), dy.data, n * 8, cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << x[i];
    } else {
      // Relative where Ai decays; against its envelope |x|^-1/4 / sqrt(pi)
      // where it oscillates (the phase 2/3 |x|^3/2 carries |x|^3/2 ulps).
      const double scale = x[i] < -1 ? std::pow(-x[i], 1.25) * 1e-15
                                     : std::fabs(want[i]) * 1e-14;
      EXPECT_NEAR(got[i], want[i], scale) << x[i];
    }
  }
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
}  // namespace
}  // namespace tensord

#else  // !TENSORD_WITH_CUDA

TEST(CudaKernels, Skipped) { GTEST_SKIP() << "built without the CUDA toolkit"; }

#endif  // TENSORD_WITH_CUDA
