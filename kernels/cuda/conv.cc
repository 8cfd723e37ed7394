// cuDNN convolutions for conv.h. Descriptors are RAII-wrapped per call
// (cheap host objects); handles are one per (thread, device), bound to the
// caller's stream before each call, like the cuBLAS handles in blas.cc.
#if TENSORD_WITH_CUDA
#include "kernels/cuda/conv.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cuda {
namespace {

struct ThreadHandles {
  std::map<int, cudnnHandle_t> by_device;
  ~ThreadHandles() {
    for (auto& [device, handle] : by_device) cudnnDestroy(handle);
  }
};

absl::StatusOr<cudnnHandle_t> HandleFor(StreamHandle stream) {
  thread_local ThreadHandles handles;
  int device = 0;
  TD_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  auto it = handles.by_device.find(device);
  if (it == handles.by_device.end()) {
    cudnnHandle_t h = nullptr;
    TD_CUDA_RETURN_IF_ERROR(cudnnCreate(&h));
    it = handles.by_device.emplace(device, h).first;
  }
  TD_CUDA_RETURN_IF_ERROR(
      cudnnSetStream(it->second, static_cast<cudaStream_t>(stream)));
  return it->second;
}

// The descriptors of one convolution, destroyed with it.
class Descriptors {
 public:
  ~Descriptors() {
    if (x_) cudnnDestroyTensorDescriptor(x_);
    if (y_) cudnnDestroyTensorDescriptor(y_);
    if (b_) cudnnDestroyTensorDescriptor(b_);
    if (w_) cudnnDestroyFilterDescriptor(w_);
    if (conv_) cudnnDestroyConvolutionDescriptor(conv_);
  }

  absl::Status Init(const ConvShape& s, DType dtype) {
    if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
      return absl::UnimplementedError(absl::StrCat(
          "conv2d on cuda supports float32/float64, got ", DTypeName(dtype)));
    }
    for (int64_t v : {s.n, s.c, s.h, s.w, s.o, s.oh, s.ow}) {
      if (v > (1 << 30)) {
        return absl::UnimplementedError("conv2d on cuda: dimension too large");
      }
    }
    type_ = dtype == DType::kFloat32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
    auto i = [](int64_t v) { return static_cast<int>(v); };
    TD_CUDA_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&x_));
    TD_CUDA_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(
        x_, CUDNN_TENSOR_NCHW, type_, i(s.n), i(s.c), i(s.h), i(s.w)));
    TD_CUDA_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&y_));
    TD_CUDA_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(
        y_, CUDNN_TENSOR_NCHW, type_, i(s.n), i(s.o), i(s.oh), i(s.ow)));
    TD_CUDA_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&b_));
    TD_CUDA_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(b_, CUDNN_TENSOR_NCHW,
                                                       type_, 1, i(s.o), 1, 1));
    TD_CUDA_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&w_));
    TD_CUDA_RETURN_IF_ERROR(
        cudnnSetFilter4dDescriptor(w_, type_, CUDNN_TENSOR_NCHW, i(s.o),
                                   i(s.c / s.groups), i(s.kh), i(s.kw)));
    TD_CUDA_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&conv_));
    TD_CUDA_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(
        conv_, i(s.ph), i(s.pw), i(s.sh), i(s.sw), i(s.dh), i(s.dw),
        CUDNN_CROSS_CORRELATION, type_));
    TD_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(conv_, i(s.groups)));
    // FMA math keeps float32 exact-ish (no TF32); default math lets cuDNN
    // use tensor ops (TF32 for float32) when the session allows it.
    const cudnnMathType_t math = s.allow_tf32 && dtype == DType::kFloat32
                                     ? CUDNN_DEFAULT_MATH
                                     : CUDNN_FMA_MATH;
    TD_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_, math));
    return absl::OkStatus();
  }

  // alpha = 1, beta = 0 (or 1 for the bias add) in the compute type.
  const void* one() const {
    return type_ == CUDNN_DATA_FLOAT ? static_cast<const void*>(&one32_)
                                     : static_cast<const void*>(&one64_);
  }
  const void* zero() const {
    return type_ == CUDNN_DATA_FLOAT ? static_cast<const void*>(&zero32_)
                                     : static_cast<const void*>(&zero64_);
  }

  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, b_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;

 private:
  cudnnDataType_t type_ = CUDNN_DATA_FLOAT;
  const float one32_ = 1.0f, zero32_ = 0.0f;
  const double one64_ = 1.0, zero64_ = 0.0;
};

// What a convolution's algorithm ranking depends on: the direction, the
// device, the dtype and math mode, and the geometry.
std::string RankingKey(const char* what, const ConvShape& s, DType dtype) {
  int device = 0;
  cudaGetDevice(&device);
  return absl::StrCat(what, "/", device, "/", DTypeName(dtype), "/",
                      s.allow_tf32, "/", s.n, ",", s.c, ",", s.h, ",", s.w, "/",
                      s.o, ",", s.groups, ",", s.kh, ",", s.kw, "/", s.sh, ",",
                      s.sw, ",", s.ph, ",", s.pw, ",", s.dh, ",", s.dw);
}

// Tries cuDNN's ranked algorithms until one's workspace can be allocated.
// Note [Convolution rankings]: cuDNN's heuristic query costs far more host
// time than the convolution's launch (cuDNN 9 builds execution plans for
// it), so each thread keeps the ranking per key, as PyTorch caches its
// algorithm choice per convolution geometry.
template <typename Perf, typename Get, typename Run>
absl::Status RunRanked(const char* what, const std::string& key, Get get,
                       Run run, const WorkspaceFn& workspace) {
  constexpr int kMax = 16;
  thread_local std::map<std::string, std::vector<Perf>> rankings;
  auto it = rankings.find(key);
  if (it == rankings.end()) {
    Perf perf[kMax];
    int found = 0;
    TD_CUDA_RETURN_IF_ERROR(get(kMax, &found, perf));
    it = rankings.emplace(key, std::vector<Perf>(perf, perf + found)).first;
  }
  const std::vector<Perf>& perf = it->second;
  const int found = static_cast<int>(perf.size());
  absl::Status last = absl::UnimplementedError(
      absl::StrCat(what, ": cuDNN offers no algorithm for this shape"));
  for (int k = 0; k < found; ++k) {
    if (perf[k].status != CUDNN_STATUS_SUCCESS) continue;
    void* ws = nullptr;
    if (perf[k].memory > 0) {
      absl::StatusOr<void*> got = workspace(perf[k].memory);
      if (!got.ok()) {
        last = got.status();
        continue;  // a smaller workspace may follow
      }
      ws = *got;
    }
    return run(perf[k].algo, ws, perf[k].memory);
  }
  return last;
}

}  // namespace

absl::Status Conv2dForward(const ConvShape& s, const StridedView& x,
                           const StridedView& w, const StridedView* bias,
                           const StridedView& y, const WorkspaceFn& workspace,
                           StreamHandle stream) {
  if (s.n * s.o * s.oh * s.ow == 0) return absl::OkStatus();
  Descriptors d;
  TD_RETURN_IF_ERROR(d.Init(s, x.dtype));
  TD_ASSIGN_OR_RETURN(cudnnHandle_t h, HandleFor(stream));
  TD_RETURN_IF_ERROR(RunRanked<cudnnConvolutionFwdAlgoPerf_t>(
      "conv2d", RankingKey("conv2d", s, x.dtype),
      [&](int max, int* found, cudnnConvolutionFwdAlgoPerf_t* perf) {
        return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x_, d.w_, d.conv_,
                                                      d.y_, max, found, perf);
      },
      [&](cudnnConvolutionFwdAlgo_t algo, void* ws, size_t bytes) {
        TD_CUDA_RETURN_IF_ERROR(cudnnConvolutionForward(
            h, d.one(), d.x_, x.data, d.w_, w.data, d.conv_, algo, ws, bytes,
            d.zero(), d.y_, y.data));
        return absl::OkStatus();
      },
      workspace));
  if (bias != nullptr) {
    TD_CUDA_RETURN_IF_ERROR(
        cudnnAddTensor(h, d.one(), d.b_, bias->data, d.one(), d.y_, y.data));
  }
  return absl::OkStatus();
}

absl::Status Conv2dBackwardData(const ConvShape& s, const StridedView& dy,
                                const StridedView& w, const StridedView& dx,
                                const WorkspaceFn& workspace,
                                StreamHandle stream) {
  if (s.n * s.c * s.h * s.w == 0) return absl::OkStatus();
  Descriptors d;
  TD_RETURN_IF_ERROR(d.Init(s, dy.dtype));
  TD_ASSIGN_OR_RETURN(cudnnHandle_t h, HandleFor(stream));
  return RunRanked<cudnnConvolutionBwdDataAlgoPerf_t>(
      "conv2d_backward_input", RankingKey("conv2d_backward_input", s, dy.dtype),
      [&](int max, int* found, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(
            h, d.w_, d.y_, d.conv_, d.x_, max, found, perf);
      },
      [&](cudnnConvolutionBwdDataAlgo_t algo, void* ws, size_t bytes) {
        TD_CUDA_RETURN_IF_ERROR(cudnnConvolutionBackwardData(
            h, d.one(), d.w_, w.data, d.y_, dy.data, d.conv_, algo, ws, bytes,
            d.zero(), d.x_, dx.data));
        return absl::OkStatus();
      },
      workspace);
}

absl::Status Conv2dBackwardFilter(const ConvShape& s, const StridedView& dy,
                                  const StridedView& x, const StridedView& dw,
                                  const WorkspaceFn& workspace,
                                  StreamHandle stream) {
  if (s.o * s.c * s.kh * s.kw == 0) return absl::OkStatus();
  Descriptors d;
  TD_RETURN_IF_ERROR(d.Init(s, dy.dtype));
  TD_ASSIGN_OR_RETURN(cudnnHandle_t h, HandleFor(stream));
  if (s.n * s.oh * s.ow == 0) {  // an empty sum: zeros
    TD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dw.data, 0,
                                            dw.numel() * ItemSize(dw.dtype),
                                            static_cast<cudaStream_t>(stream)));
    return absl::OkStatus();
  }
  return RunRanked<cudnnConvolutionBwdFilterAlgoPerf_t>(
      "conv2d_backward_weight",
      RankingKey("conv2d_backward_weight", s, dy.dtype),
      [&](int max, int* found, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, d.x_, d.y_, d.conv_, d.w_, max, found, perf);
      },
      [&](cudnnConvolutionBwdFilterAlgo_t algo, void* ws, size_t bytes) {
        TD_CUDA_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter(
            h, d.one(), d.x_, x.data, d.y_, dy.data, d.conv_, algo, ws, bytes,
            d.zero(), d.w_, dw.data));
        return absl::OkStatus();
      },
      workspace);
}

}  // namespace cuda
}  // namespace tensord
#endif  // TENSORD_WITH_CUDA
