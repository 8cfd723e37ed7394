// The fixture of the CUDA kernel tests that compare kernels/cuda with
// kernels/cpu (cuda_kernels_test.cc, cuda_nn_kernels_test.cc): device
// buffers on one stream, uploads and downloads through float32, and a
// tolerance check; skips with "no CUDA device" without one.
#ifndef TENSORD_KERNELS_CUDA_CUDA_KERNELS_TEST_FIXTURE_H_
#define TENSORD_KERNELS_CUDA_CUDA_KERNELS_TEST_FIXTURE_H_

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda_testing {

// A C-contiguous view of `shape` over `data` (host or device memory).
inline StridedView ContiguousView(void* data, const Shape& shape, DType dtype) {
  StridedView v;
  v.data = data;
  v.dtype = dtype;
  v.ndim = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    v.sizes[d] = shape[d];
    v.strides[d] = stride;
    stride *= shape[d];
  }
  return v;
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
    return ContiguousView(const_cast<float*>(values.data()), shape,
                          DType::kFloat32);
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

}  // namespace cuda_testing
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_CUDA_KERNELS_TEST_FIXTURE_H_
