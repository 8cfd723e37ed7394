#include "kernels/cpu/elementwise.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// Runs body(ptrs, n, strides) over the coalesced loop of `views`, split over
// the intra-op pool by outer index.
template <int N, typename Body>
void RunLoop(const std::array<const StridedView*, N>& views, Body&& body) {
  const LoopShape<N> loop = MakeLoop<N>(views);
  std::array<char*, N> base;
  std::array<int64_t, N> item;
  for (int v = 0; v < N; ++v) {
    base[v] = static_cast<char*>(views[v]->data);
    item[v] = static_cast<int64_t>(ItemSize(views[v]->dtype));
  }
  const int64_t inner = loop.sizes[loop.ndim - 1];
  ParallelFor(OuterCount(loop), inner, [&](int64_t begin, int64_t end) {
    ForEachInner<N>(loop, base, item, begin, end, body);
  });
}

template <typename To, typename From>
To Convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else {
    return static_cast<To>(v);
  }
}

template <typename T>
T ApplyUnary(UnaryOp op, T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x;  // rejected earlier for bool by shape inference
  } else {
    switch (op) {
      case UnaryOp::kNeg: return static_cast<T>(-x);
      case UnaryOp::kRelu: return x > T{0} ? x : T{0};
      case UnaryOp::kAbs: return x < T{0} ? static_cast<T>(-x) : x;
      case UnaryOp::kExp: return static_cast<T>(std::exp(x));
      case UnaryOp::kLog: return static_cast<T>(std::log(x));
      case UnaryOp::kSqrt: return static_cast<T>(std::sqrt(x));
      case UnaryOp::kTanh: return static_cast<T>(std::tanh(x));
      case UnaryOp::kSigmoid:
        return static_cast<T>(1 / (1 + std::exp(-static_cast<double>(x))));
    }
    return x;
  }
}

// The loop body for one binary op, specialised so the inner loop has no
// switch and vectorises.
template <typename T, typename F>
void BinaryLoop(const StridedView& a, const StridedView& b,
                const StridedView& out, F f) {
  RunLoop<3>({&out, &a, &b}, [&](const std::array<char*, 3>& p, int64_t n,
                                 const std::array<int64_t, 3>& s) {
    T* o = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 0) {
      const T yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else {
      const int64_t so = s[0] / sizeof(T), sx = s[1] / sizeof(T),
                    sy = s[2] / sizeof(T);
      for (int64_t i = 0; i < n; ++i) o[i * so] = f(x[i * sx], y[i * sy]);
    }
  });
}

}  // namespace

absl::Status Copy(const StridedView& in, const StridedView& out) {
  absl::Status status;
  auto outer = [&](auto out_tag) {
    using To = decltype(out_tag);
    status = DispatchAll(in.dtype, "copy", [&](auto in_tag) {
      using From = decltype(in_tag);
      RunLoop<2>({&out, &in}, [](const std::array<char*, 2>& p, int64_t n,
                                 const std::array<int64_t, 2>& s) {
        if (std::is_same_v<To, From> && s[0] == sizeof(To) &&
            s[1] == sizeof(From)) {
          std::memcpy(p[0], p[1], n * sizeof(To));
          return;
        }
        for (int64_t i = 0; i < n; ++i) {
          *reinterpret_cast<To*>(p[0] + i * s[0]) =
              Convert<To>(*reinterpret_cast<const From*>(p[1] + i * s[1]));
        }
      });
    });
  };
  absl::Status dispatched = DispatchAll(out.dtype, "copy", outer);
  return dispatched.ok() ? status : dispatched;
}

absl::Status Fill(const StridedView& out, double value) {
  return DispatchAll(out.dtype, "fill", [&](auto tag) {
    using T = decltype(tag);
    const T v = Convert<T>(value);
    RunLoop<1>({&out}, [v](const std::array<char*, 1>& p, int64_t n,
                           const std::array<int64_t, 1>& s) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
    });
  });
}

absl::Status Arange(const StridedView& out, double start, double step) {
  return DispatchAll(out.dtype, "arange", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.ptr<T>();
    const int64_t stride = out.ndim ? out.strides[0] : 1;
    for (int64_t i = 0; i < out.numel(); ++i) {
      o[i * stride] = Convert<T>(start + static_cast<double>(i) * step);
    }
  });
}

absl::Status Unary(UnaryOp op, const StridedView& in, const StridedView& out) {
  return DispatchAll(out.dtype, "unary op", [&](auto tag) {
    using T = decltype(tag);
    RunLoop<2>({&out, &in}, [op](const std::array<char*, 2>& p, int64_t n,
                                 const std::array<int64_t, 2>& s) {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            ApplyUnary(op, *reinterpret_cast<const T*>(p[1] + i * s[1]));
      }
    });
  });
}

absl::Status Binary(BinaryOp op, const StridedView& a, const StridedView& b,
                    double alpha, const StridedView& out) {
  return DispatchAll(out.dtype, "binary op", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      // bool arithmetic: add is logical or, mul is logical and (PyTorch).
      switch (op) {
        case BinaryOp::kAdd:
        case BinaryOp::kMax:
          return BinaryLoop<T>(a, b, out, [](T x, T y) { return x || y; });
        default:
          return BinaryLoop<T>(a, b, out, [](T x, T y) { return x && y; });
      }
    } else {
      const T al = static_cast<T>(alpha);
      switch (op) {
        case BinaryOp::kAdd:
          if (alpha == 1) {
            return BinaryLoop<T>(a, b, out, [](T x, T y) { return T(x + y); });
          }
          return BinaryLoop<T>(a, b, out,
                               [al](T x, T y) { return T(x + al * y); });
        case BinaryOp::kSub:
          if (alpha == 1) {
            return BinaryLoop<T>(a, b, out, [](T x, T y) { return T(x - y); });
          }
          return BinaryLoop<T>(a, b, out,
                               [al](T x, T y) { return T(x - al * y); });
        case BinaryOp::kMul:
          return BinaryLoop<T>(a, b, out, [](T x, T y) { return T(x * y); });
        case BinaryOp::kDiv:
          // True division happens in floating types (the runtime promotes);
          // integer division by zero is guarded to avoid UB.
          return BinaryLoop<T>(a, b, out, [](T x, T y) {
            if constexpr (std::is_integral_v<T>) {
              return y == 0 ? T{0} : T(x / y);
            } else {
              return T(x / y);
            }
          });
        case BinaryOp::kMax:
          return BinaryLoop<T>(a, b, out, [](T x, T y) {
            return (x != x || x > y) ? x : y;  // NaN propagates
          });
        case BinaryOp::kMin:
          return BinaryLoop<T>(a, b, out, [](T x, T y) {
            return (x != x || x < y) ? x : y;
          });
      }
    }
  });
}

}  // namespace cpu
}  // namespace tensord
