// CUDA comparisons, logical_not, where and clamp (declared in
// elementwise.h): strided maps through LaunchMap (loops.cuh); float16/
// bfloat16 operands compare and clamp in float (Note [Native half kernels]
// in elementwise.cu).
#include <cuda_runtime.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/loops.cuh"

namespace tensord {
namespace cuda {

namespace {

template <typename T>
absl::Status CompareMap(CompareOp op, const StridedView& a,
                        const StridedView& b, const StridedView& out,
                        StreamHandle stream) {
  const T* x = a.ptr<const T>();
  const T* y = b.ptr<const T>();
  bool* z = out.ptr<bool>();
  const StridedView* views[3] = {&out, &a, &b};
  return LaunchMap<3>(
      views,
      [=] __device__(const int64_t(&off)[3]) {
        const auto u = Computed(x[off[1]]), v = Computed(y[off[2]]);
        using C = decltype(u);
        bool r = false;
        switch (op) {
          case CompareOp::kEq:
            r = u == v;
            break;
          case CompareOp::kNe:
            r = u != v;
            break;
          case CompareOp::kLt:
            r = u < v;
            break;
          case CompareOp::kLe:
            r = u <= v;
            break;
          case CompareOp::kGt:
            r = u > v;
            break;
          case CompareOp::kGe:
            r = u >= v;
            break;
          case CompareOp::kAnd:
            r = u != C(0) && v != C(0);
            break;
          case CompareOp::kOr:
            r = u != C(0) || v != C(0);
            break;
          case CompareOp::kXor:
            r = (u != C(0)) != (v != C(0));
            break;
        }
        z[off[0]] = r;
      },
      stream, "compare kernel");
}

template <typename T>
absl::Status ClampMap(const StridedView& in, bool has_lo, double lo,
                      bool has_hi, double hi, const StridedView& out,
                      StreamHandle stream) {
  using C = typename Acc<T>::type;
  const T* x = in.ptr<const T>();
  T* y = out.ptr<T>();
  const C l = static_cast<C>(lo);
  const C h = static_cast<C>(hi);
  const StridedView* views[2] = {&out, &in};
  return LaunchMap<2>(
      views,
      [=] __device__(const int64_t(&off)[2]) {
        C v = Computed(x[off[1]]);
        if (v == v) {  // NaN stays NaN, as in PyTorch
          if (has_lo && v < l) v = l;
          if (has_hi && v > h) v = h;
        }
        y[off[0]] = Stored<T>(v);
      },
      stream, "clamp kernel");
}

}  // namespace

absl::Status Compare(CompareOp op, const StridedView& a, const StridedView& b,
                     const StridedView& out, StreamHandle stream) {
  switch (a.dtype) {
    case DType::kFloat16:
      return CompareMap<__half>(op, a, b, out, stream);
    case DType::kBFloat16:
      return CompareMap<__nv_bfloat16>(op, a, b, out, stream);
    default:
      break;
  }
  TD_CUDA_DISPATCH(
      a.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "comparison on cuda: unsupported dtype ", DTypeName(a.dtype))),
      return CompareMap<scalar_t>(op, a, b, out, stream));
  return absl::OkStatus();
}

absl::Status LogicalNot(const StridedView& in, const StridedView& out,
                        StreamHandle stream) {
  const void* src = in.data;
  const DType d = in.dtype;
  bool* z = out.ptr<bool>();
  const StridedView* views[2] = {&out, &in};
  return LaunchMap<2>(
      views,
      [=] __device__(const int64_t(&off)[2]) {
        const Value v = Load(src, d, off[1]);
        z[off[0]] = v.is_int ? v.i == 0 : v.f == 0.0;
      },
      stream, "logical_not kernel");
}

absl::Status Signbit(const StridedView& in, const StridedView& out,
                     StreamHandle stream) {
  const void* src = in.data;
  const DType d = in.dtype;
  bool* z = out.ptr<bool>();
  const StridedView* views[2] = {&out, &in};
  return LaunchMap<2>(
      views,
      [=] __device__(const int64_t(&off)[2]) {
        const Value v = Load(src, d, off[1]);
        z[off[0]] = v.is_int ? v.i < 0 : signbit(v.f);
      },
      stream, "signbit kernel");
}

absl::Status Where(const StridedView& cond, const StridedView& a,
                   const StridedView& b, const StridedView& out,
                   StreamHandle stream) {
  const bool* c = cond.ptr<const bool>();
  const size_t item = ItemSize(out.dtype);
  const char* x = static_cast<const char*>(a.data);
  const char* y = static_cast<const char*>(b.data);
  char* z = static_cast<char*>(out.data);
  const StridedView* views[4] = {&out, &cond, &a, &b};
  // Moves bytes, so every dtype (half types included) shares one kernel.
  return LaunchMap<4>(
      views,
      [=] __device__(const int64_t(&off)[4]) {
        const char* src = c[off[1]] ? x + off[2] * item : y + off[3] * item;
        char* dst = z + off[0] * item;
        for (size_t k = 0; k < item; ++k) dst[k] = src[k];
      },
      stream, "where kernel");
}

absl::Status Clamp(const StridedView& in, bool has_lo, double lo, bool has_hi,
                   double hi, const StridedView& out, StreamHandle stream) {
  switch (out.dtype) {
    case DType::kFloat16:
      return ClampMap<__half>(in, has_lo, lo, has_hi, hi, out, stream);
    case DType::kBFloat16:
      return ClampMap<__nv_bfloat16>(in, has_lo, lo, has_hi, hi, out, stream);
    default:
      break;
  }
  TD_CUDA_DISPATCH(
      out.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "clamp on cuda: unsupported dtype ", DTypeName(out.dtype))),
      return ClampMap<scalar_t>(in, has_lo, lo, has_hi, hi, out, stream));
  return absl::OkStatus();
}

}  // namespace cuda
}  // namespace tensord
