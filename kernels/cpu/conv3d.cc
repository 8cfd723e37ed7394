#include "kernels/cpu/conv3d.h"

#include <algorithm>
#include <string>

#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// The input position of output position `o` and kernel tap `k` along axis
// `a` (may fall in the padding: outside [0, in[a])).
inline int64_t InPos(const ConvGeometry3d& g, int a, int64_t o, int64_t k) {
  return o * g.stride[a] - g.pad[a] + k * g.dil[a];
}

int64_t Volume(const int64_t* v) { return v[0] * v[1] * v[2]; }

template <typename T>
void Forward(const T* x, const T* w, const ConvGeometry3d& g, T* y) {
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  const int64_t in_vol = Volume(g.in), out_vol = Volume(g.out),
                k_vol = Volume(g.k);
  ParallelFor(g.n * g.o, out_vol * cg * k_vol, [&](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t b = item / g.o, oc = item % g.o, grp = oc / og;
      const T* wo = w + oc * cg * k_vol;
      T* yo = y + item * out_vol;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            double acc = 0;
            for (int64_t ic = 0; ic < cg; ++ic) {
              const T* xc = x + (b * g.c + grp * cg + ic) * in_vol;
              const T* wc = wo + ic * k_vol;
              for (int64_t kd = 0; kd < g.k[0]; ++kd) {
                const int64_t id = InPos(g, 0, od, kd);
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                  const int64_t ih = InPos(g, 1, oh, kh);
                  if (ih < 0 || ih >= g.in[1]) continue;
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t iw = InPos(g, 2, ow, kw);
                    if (iw < 0 || iw >= g.in[2]) continue;
                    acc += static_cast<double>(
                               xc[(id * g.in[1] + ih) * g.in[2] + iw]) *
                           wc[(kd * g.k[1] + kh) * g.k[2] + kw];
                  }
                }
              }
            }
            yo[(od * g.out[1] + oh) * g.out[2] + ow] = static_cast<T>(acc);
          }
    }
  });
}

// The output position whose tap `k` reads input position `i` along axis `a`,
// or -1 when none does.
inline int64_t OutPos(const ConvGeometry3d& g, int a, int64_t i, int64_t k) {
  const int64_t t = i + g.pad[a] - k * g.dil[a];
  if (t < 0 || t % g.stride[a] != 0) return -1;
  const int64_t o = t / g.stride[a];
  return o < g.out[a] ? o : -1;
}

template <typename T>
void BackwardInput(const T* dy, const T* w, const ConvGeometry3d& g, T* dx) {
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  const int64_t in_vol = Volume(g.in), out_vol = Volume(g.out),
                k_vol = Volume(g.k);
  ParallelFor(g.n * g.c, in_vol * og * k_vol, [&](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t b = item / g.c, c = item % g.c, grp = c / cg, ic = c % cg;
      T* dxc = dx + item * in_vol;
      for (int64_t id = 0; id < g.in[0]; ++id)
        for (int64_t ih = 0; ih < g.in[1]; ++ih)
          for (int64_t iw = 0; iw < g.in[2]; ++iw) {
            double acc = 0;
            for (int64_t j = 0; j < og; ++j) {
              const int64_t oc = grp * og + j;
              const T* dyo = dy + (b * g.o + oc) * out_vol;
              const T* wc = w + (oc * cg + ic) * k_vol;
              for (int64_t kd = 0; kd < g.k[0]; ++kd) {
                const int64_t od = OutPos(g, 0, id, kd);
                if (od < 0) continue;
                for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                  const int64_t oh = OutPos(g, 1, ih, kh);
                  if (oh < 0) continue;
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t ow = OutPos(g, 2, iw, kw);
                    if (ow < 0) continue;
                    acc += static_cast<double>(
                               dyo[(od * g.out[1] + oh) * g.out[2] + ow]) *
                           wc[(kd * g.k[1] + kh) * g.k[2] + kw];
                  }
                }
              }
            }
            dxc[(id * g.in[1] + ih) * g.in[2] + iw] = static_cast<T>(acc);
          }
    }
  });
}

template <typename T>
void BackwardWeight(const T* dy, const T* x, const ConvGeometry3d& g, T* dw) {
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  const int64_t in_vol = Volume(g.in), out_vol = Volume(g.out),
                k_vol = Volume(g.k);
  ParallelFor(g.o * cg, k_vol * g.n * out_vol, [&](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t oc = item / cg, ic = item % cg, grp = oc / og;
      T* dwc = dw + item * k_vol;
      for (int64_t kd = 0; kd < g.k[0]; ++kd)
        for (int64_t kh = 0; kh < g.k[1]; ++kh)
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            double acc = 0;
            for (int64_t b = 0; b < g.n; ++b) {
              const T* dyo = dy + (b * g.o + oc) * out_vol;
              const T* xc = x + (b * g.c + grp * cg + ic) * in_vol;
              for (int64_t od = 0; od < g.out[0]; ++od) {
                const int64_t id = InPos(g, 0, od, kd);
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                  const int64_t ih = InPos(g, 1, oh, kh);
                  if (ih < 0 || ih >= g.in[1]) continue;
                  for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                    const int64_t iw = InPos(g, 2, ow, kw);
                    if (iw < 0 || iw >= g.in[2]) continue;
                    acc += static_cast<double>(
                               dyo[(od * g.out[1] + oh) * g.out[2] + ow]) *
                           xc[(id * g.in[1] + ih) * g.in[2] + iw];
                  }
                }
              }
            }
            dwc[(kd * g.k[1] + kh) * g.k[2] + kw] = static_cast<T>(acc);
          }
    }
  });
}

absl::Status CheckDType(DType dtype, const char* what) {
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64) {
    return absl::OkStatus();
  }
  return absl::InternalError(std::string(what) +
                             ": expected float32 or float64 data");
}

}  // namespace

absl::Status Conv3d(const StridedView& input, const StridedView& weight,
                    const ConvGeometry3d& g, const StridedView& out) {
  absl::Status s = CheckDType(input.dtype, "conv3d");
  if (!s.ok()) return s;
  if (input.dtype == DType::kFloat64) {
    Forward(input.ptr<const double>(), weight.ptr<const double>(), g,
            out.ptr<double>());
  } else {
    Forward(input.ptr<const float>(), weight.ptr<const float>(), g,
            out.ptr<float>());
  }
  return absl::OkStatus();
}

absl::Status Conv3dBackwardInput(const StridedView& grad,
                                 const StridedView& weight,
                                 const ConvGeometry3d& g,
                                 const StridedView& grad_input) {
  absl::Status s = CheckDType(grad.dtype, "conv3d_backward_input");
  if (!s.ok()) return s;
  if (grad.dtype == DType::kFloat64) {
    BackwardInput(grad.ptr<const double>(), weight.ptr<const double>(), g,
                  grad_input.ptr<double>());
  } else {
    BackwardInput(grad.ptr<const float>(), weight.ptr<const float>(), g,
                  grad_input.ptr<float>());
  }
  return absl::OkStatus();
}

absl::Status Conv3dBackwardWeight(const StridedView& grad,
                                  const StridedView& input,
                                  const ConvGeometry3d& g,
                                  const StridedView& grad_weight) {
  absl::Status s = CheckDType(grad.dtype, "conv3d_backward_weight");
  if (!s.ok()) return s;
  if (grad.dtype == DType::kFloat64) {
    BackwardWeight(grad.ptr<const double>(), input.ptr<const double>(), g,
                   grad_weight.ptr<double>());
  } else {
    BackwardWeight(grad.ptr<const float>(), input.ptr<const float>(), g,
                   grad_weight.ptr<float>());
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace tensord
