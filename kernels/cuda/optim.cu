// Fused optimizer steps (optim.h): grid-stride loops over contiguous
// tensors, the per-element arithmetic of runtime/ops/sgd_step_ops.cc's
// SgdKernel and adam_step_ops.cc's AdamKernel, with the step constants computed
// once on the host in double as there.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/optim.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cuda {
namespace {

template <typename T>
__global__ void SgdKernel(SgdParams c, T* __restrict__ p,
                          const T* __restrict__ g, T* __restrict__ buf,
                          int64_t n) {
  const T lr = c.lr, mom = c.momentum, wd = c.weight_decay;
  const T keep = 1 - c.dampening;
  TD_GRID_STRIDE(i, n) {
    T d = c.maximize ? -g[i] : g[i];
    if (c.weight_decay != 0) d = d + wd * p[i];
    if (c.momentum != 0) {
      const T b = c.first_step ? d : buf[i] * mom + keep * d;
      buf[i] = b;
      d = c.nesterov ? d + mom * b : b;
    }
    p[i] = p[i] + -lr * d;
  }
}

// Constants of one Adam step, as AdamKernel computes them.
template <typename T>
struct AdamConsts {
  T w1, b2, w2, wd, decay, step_size, bc2_sqrt, eps;
};

template <typename T>
__global__ void AdamKernel(AdamParams c, AdamConsts<T> k, T* __restrict__ p,
                           const T* __restrict__ g, T* __restrict__ m,
                           T* __restrict__ v, int64_t n) {
  TD_GRID_STRIDE(i, n) {
    T d = c.maximize ? -g[i] : g[i];
    T x = p[i];
    if (c.weight_decay != 0) {
      if (c.decoupled) {
        x = x * k.decay;
      } else {
        d = d + k.wd * x;
      }
    }
    const T mi = m[i] + k.w1 * (d - m[i]);  // lerp_(grad, 1 - beta1)
    const T vi = v[i] * k.b2 + k.w2 * d * d;
    m[i] = mi;
    v[i] = vi;
    const T denom = sqrt(vi) / k.bc2_sqrt + k.eps;
    p[i] = x + -k.step_size * (mi / denom);
  }
}

absl::Status CheckViews(const char* op,
                        std::initializer_list<const StridedView*> views) {
  const StridedView& p = **views.begin();
  if (p.dtype != DType::kFloat32 && p.dtype != DType::kFloat64) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, " on cuda: fused for float32/float64, got ", DTypeName(p.dtype)));
  }
  for (const StridedView* t : views) {
    if (t->dtype != p.dtype || t->numel() != p.numel() || !t->is_contiguous()) {
      return absl::InvalidArgumentError(absl::StrCat(
          op,
          " on cuda: the fused step takes contiguous tensors of one "
          "dtype and size"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SgdStep(const SgdParams& c, const StridedView& p,
                     const StridedView& grad, const StridedView& buf,
                     StreamHandle stream) {
  if (c.momentum != 0) {
    TD_RETURN_IF_ERROR(CheckViews("sgd_step", {&p, &grad, &buf}));
  } else {
    TD_RETURN_IF_ERROR(CheckViews("sgd_step", {&p, &grad}));
  }
  const int64_t n = p.numel();
  if (n == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  if (p.dtype == DType::kFloat64) {
    SgdKernel<double><<<BlocksFor(n, 4), kThreads, 0, s>>>(
        c, p.ptr<double>(), grad.ptr<const double>(),
        c.momentum != 0 ? buf.ptr<double>() : nullptr, n);
  } else {
    SgdKernel<float><<<BlocksFor(n, 4), kThreads, 0, s>>>(
        c, p.ptr<float>(), grad.ptr<const float>(),
        c.momentum != 0 ? buf.ptr<float>() : nullptr, n);
  }
  return LaunchStatus("sgd_step kernel");
}

absl::Status AdamStep(const AdamParams& c, const StridedView& p,
                      const StridedView& grad, const StridedView& m,
                      const StridedView& v, StreamHandle stream) {
  TD_RETURN_IF_ERROR(CheckViews("adam_step", {&p, &grad, &m, &v}));
  const int64_t n = p.numel();
  if (n == 0) return absl::OkStatus();
  const double bc1 = 1 - std::pow(c.beta1, static_cast<double>(c.step));
  const double bc2 = 1 - std::pow(c.beta2, static_cast<double>(c.step));
  auto s = static_cast<cudaStream_t>(stream);
  auto launch = [&](auto zero) {
    using T = decltype(zero);
    // As AdamKernel: each constant rounded to T from double.
    const AdamConsts<T> k{T(1 - c.beta1),
                          T(c.beta2),
                          T(1 - c.beta2),
                          T(c.weight_decay),
                          T(1 - c.lr * c.weight_decay),
                          T(c.lr / bc1),
                          T(std::sqrt(bc2)),
                          T(c.eps)};
    AdamKernel<T><<<BlocksFor(n, 4), kThreads, 0, s>>>(
        c, k, p.ptr<T>(), grad.ptr<const T>(), m.ptr<T>(), v.ptr<T>(), n);
  };
  if (p.dtype == DType::kFloat64) {
    launch(double{});
  } else {
    launch(float{});
  }
  return LaunchStatus("adam_step kernel");
}

}  // namespace cuda
}  // namespace tensord
