// Strided iteration shared by the CPU kernels (header-only, templates).
//
// Note [Strided loops]: every elementwise kernel walks N views of the same
// shape in lockstep. We coalesce dimensions that are contiguous in every view,
// then run the innermost dimension as a plain loop with per-view strides so
// the compiler vectorises the common stride-1 case. Outer dimensions are
// walked with an odometer. Large loops are split across the intra-op pool by
// the caller (see parallel.h), by ranges of the flattened outer index.
#ifndef TENSORD_KERNELS_CPU_LOOPS_H_
#define TENSORD_KERNELS_CPU_LOOPS_H_

#include <array>
#include <cstdint>

#include "kernels/cpu/parallel.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

template <int N>
struct LoopShape {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};  // in elements
};

// Builds a coalesced loop over `views` (all of the same sizes as views[0]).
template <int N>
LoopShape<N> MakeLoop(const std::array<const StridedView*, N>& views) {
  LoopShape<N> loop;
  const StridedView& first = *views[0];
  // Drop size-1 dims, then merge dim i into i+1 when contiguous for all.
  for (int d = 0; d < first.ndim; ++d) {
    if (first.sizes[d] == 1) continue;
    const int k = loop.ndim;
    if (k > 0) {
      bool mergeable = true;
      for (int v = 0; v < N; ++v) {
        if (loop.strides[v][k - 1] != views[v]->strides[d] * first.sizes[d]) {
          mergeable = false;
        }
      }
      if (mergeable) {
        loop.sizes[k - 1] *= first.sizes[d];
        for (int v = 0; v < N; ++v)
          loop.strides[v][k - 1] = views[v]->strides[d];
        continue;
      }
    }
    loop.sizes[k] = first.sizes[d];
    for (int v = 0; v < N; ++v) loop.strides[v][k] = views[v]->strides[d];
    loop.ndim = k + 1;
  }
  if (loop.ndim == 0) {  // scalar or all ones: one element
    loop.ndim = 1;
    loop.sizes[0] = 1;
    for (int v = 0; v < N; ++v) loop.strides[v][0] = 1;
  }
  return loop;
}

// Calls body(ptrs..., inner_count, inner_strides) for outer indices
// [begin, end) of the coalesced loop; `base` holds each view's char* base
// and `item` each view's element size.
template <int N, typename Body>
void ForEachInner(const LoopShape<N>& loop, const std::array<char*, N>& base,
                  const std::array<int64_t, N>& item, int64_t begin,
                  int64_t end, Body&& body) {
  const int inner = loop.ndim - 1;
  int64_t counter[kMaxDims] = {};
  // Decompose `begin` into the odometer.
  int64_t rem = begin;
  for (int d = inner - 1; d >= 0; --d) {
    counter[d] = rem % loop.sizes[d];
    rem /= loop.sizes[d];
  }
  std::array<int64_t, N> inner_stride;
  for (int v = 0; v < N; ++v)
    inner_stride[v] = loop.strides[v][inner] * item[v];
  for (int64_t outer = begin; outer < end; ++outer) {
    std::array<char*, N> ptr = base;
    for (int d = 0; d < inner; ++d) {
      for (int v = 0; v < N; ++v) {
        ptr[v] += counter[d] * loop.strides[v][d] * item[v];
      }
    }
    body(ptr, loop.sizes[inner], inner_stride);
    for (int d = inner - 1; d >= 0; --d) {
      if (++counter[d] < loop.sizes[d]) break;
      counter[d] = 0;
    }
  }
}

template <int N>
int64_t OuterCount(const LoopShape<N>& loop) {
  int64_t n = 1;
  for (int d = 0; d + 1 < loop.ndim; ++d) n *= loop.sizes[d];
  return n;
}

// Runs body(ptrs, n, byte_strides) over the coalesced loop of `views`,
// split over the intra-op pool by outer index.
template <int N, typename Body>
void RunLoop(const std::array<const StridedView*, N>& views, Body&& body) {
  const LoopShape<N> loop = MakeLoop<N>(views);
  std::array<char*, N> base;
  std::array<int64_t, N> item;
  for (int v = 0; v < N; ++v) {
    base[v] = static_cast<char*>(views[v]->data);
    item[v] = static_cast<int64_t>(ItemSize(views[v]->dtype));
  }
  if (views[0]->numel() == 0) return;
  const int64_t inner = loop.sizes[loop.ndim - 1];
  ParallelFor(OuterCount(loop), inner, [&](int64_t begin, int64_t end) {
    ForEachInner<N>(loop, base, item, begin, end, body);
  });
}

// Elementwise map out[i] = f(in0[i], ...) with every view of type T (or Out
// for the output), stride-1 inner loops written so they vectorise.
template <typename Out, typename T, typename F>
void Map1(const StridedView& in, const StridedView& out, F f) {
  RunLoop<2>({&out, &in}, [&](const std::array<char*, 2>& p, int64_t n,
                              const std::array<int64_t, 2>& s) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(T)) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
    } else {
      const int64_t so = s[0] / sizeof(Out), sx = s[1] / sizeof(T);
      for (int64_t i = 0; i < n; ++i) o[i * so] = f(x[i * sx]);
    }
  });
}

template <typename Out, typename T, typename F>
void Map2(const StridedView& a, const StridedView& b, const StridedView& out,
          F f) {
  RunLoop<3>({&out, &a, &b}, [&](const std::array<char*, 3>& p, int64_t n,
                                 const std::array<int64_t, 3>& s) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (s[0] == sizeof(Out) && s[1] == sizeof(T) && s[2] == 0) {
      const T yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else if (s[0] == sizeof(Out) && s[1] == 0 && s[2] == sizeof(T)) {
      const T xv = *x;
      for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
    } else {
      const int64_t so = s[0] / sizeof(Out), sx = s[1] / sizeof(T),
                    sy = s[2] / sizeof(T);
      for (int64_t i = 0; i < n; ++i) o[i * so] = f(x[i * sx], y[i * sy]);
    }
  });
}

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_LOOPS_H_
