// The gradients of conv2d and the 2-d pools as ops (internal to backward
// formulas, but catalog ops like any other): direct loops on contiguous
// float32/float64 data, split over the intra-op pool by image/plane so each
// worker writes disjoint memory. Half inputs compute in float32 (Note [Half
// compute]). Not differentiable themselves (no double backward of conv).
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using I = std::vector<int64_t>;

struct Win {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
};

int64_t At(const I& v, size_t i, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[i];
}

Win WindowFrom(const Attrs& attrs, int64_t kh, int64_t kw) {
  Win w;
  w.kh = kh, w.kw = kw;
  const I& s = attrs.Ints("stride");
  w.sh = At(s, 0, kh), w.sw = At(s, 1, kw);
  w.ph = At(attrs.Ints("padding"), 0, 0),
  w.pw = At(attrs.Ints("padding"), 1, 0);
  if (attrs.Has("dilation")) {
    w.dh = At(attrs.Ints("dilation"), 0, 1);
    w.dw = At(attrs.Ints("dilation"), 1, 1);
  }
  return w;
}

// Output 0: a float tensor of `shape` with grad's dtype.
absl::Status CheckGradInputs(absl::Span<const Tensor> in, int rank_lo,
                             int rank_hi) {
  for (const Tensor& t : in) {
    TD_RETURN_IF_ERROR(RequireFloating(t, "a pooling/conv gradient"));
    if (t.ndim() < rank_lo || t.ndim() > rank_hi) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a ", rank_lo, "-d to ", rank_hi,
                       "-d tensor, got shape ", ShapeToString(t.shape())));
    }
  }
  if (in[0].dtype() != in[1].dtype()) {
    return absl::InvalidArgumentError("grad and input must have one dtype");
  }
  return absl::OkStatus();
}

Specs InferSized(absl::Span<const Tensor> in, const Attrs& attrs,
                 const char* size_attr) {
  TD_RETURN_IF_ERROR(CheckGradInputs(in, 4, 4));
  TD_ASSIGN_OR_RETURN(Shape s, ShapeAttr(attrs, size_attr, in[0].dtype()));
  if (s.size() != 4 || s[0] * 0 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(size_attr, " must have 4 sizes"));
  }
  const int64_t groups = attrs.Int("groups");
  if (groups < 1) return absl::InvalidArgumentError("groups must be >= 1");
  return std::vector<TensorSpec>{{in[0].dtype(), s, in[0].device()}};
}

Specs InferConvInput(absl::Span<const Tensor> in, const Attrs& attrs,
                     const OpContext&) {
  TD_ASSIGN_OR_RETURN(auto specs, InferSized(in, attrs, "input_size"));
  const Shape& s = specs[0].shape;
  const int64_t g = attrs.Int("groups");
  if (s[1] != in[1].shape()[1] * g || in[0].shape()[1] != in[1].shape()[0] ||
      in[0].shape()[0] != s[0] || in[1].shape()[0] % g != 0) {
    return absl::InvalidArgumentError("conv2d_backward_input: shapes disagree");
  }
  return specs;
}

Specs InferConvWeight(absl::Span<const Tensor> in, const Attrs& attrs,
                      const OpContext&) {
  TD_ASSIGN_OR_RETURN(auto specs, InferSized(in, attrs, "weight_size"));
  const Shape& s = specs[0].shape;
  const int64_t g = attrs.Int("groups");
  if (in[1].shape()[1] != s[1] * g || in[0].shape()[1] != s[0] ||
      in[0].shape()[0] != in[1].shape()[0] || s[0] % g != 0) {
    return absl::InvalidArgumentError(
        "conv2d_backward_weight: shapes disagree");
  }
  return specs;
}

// The conv geometry, from grad [N, O, OH, OW], image [N, C, H, W] and
// weight [O, C/g, KH, KW] shapes.
struct ConvDims {
  int64_t n, c, h, w, o, oh, ow, kh, kw, groups;
  Win win;
};

ConvDims Dims(const Shape& grad, const Shape& image, const Shape& weight,
              const Attrs& attrs) {
  ConvDims d;
  d.n = image[0], d.c = image[1], d.h = image[2], d.w = image[3];
  d.o = grad[1], d.oh = grad[2], d.ow = grad[3];
  d.kh = weight[2], d.kw = weight[3];
  d.groups = attrs.Int("groups");
  d.win = WindowFrom(attrs, 1, 1);
  d.win.kh = d.kh, d.win.kw = d.kw;
  return d;
}

// Calls fn(n, oc, c, oh, ow, ki, kj, ih, iw) for every valid tap; `outer`
// picks the loop split: image n (input grad) or output channel oc (weight).
template <typename Fn>
void ForTaps(const ConvDims& d, int64_t n, int64_t oc, Fn fn) {
  const int64_t og = d.o / d.groups, cg = d.c / d.groups;
  const int64_t grp = oc / og;
  for (int64_t cl = 0; cl < cg; ++cl) {
    const int64_t c = grp * cg + cl;
    for (int64_t ki = 0; ki < d.kh; ++ki) {
      for (int64_t kj = 0; kj < d.kw; ++kj) {
        for (int64_t y = 0; y < d.oh; ++y) {
          const int64_t ih = y * d.win.sh - d.win.ph + ki * d.win.dh;
          if (ih < 0 || ih >= d.h) continue;
          for (int64_t x = 0; x < d.ow; ++x) {
            const int64_t iw = x * d.win.sw - d.win.pw + kj * d.win.dw;
            if (iw < 0 || iw >= d.w) continue;
            fn(n, oc, c, cl, ki, kj, y, x, ih, iw);
          }
        }
      }
    }
  }
}

template <typename T>
void ConvInputGrad(const ConvDims& d, const T* g, const T* wt, T* gi) {
  const int64_t cg = d.c / d.groups;
  cpu::ParallelFor(
      d.n, d.o * d.oh * d.ow * cg * d.kh * d.kw, [&](int64_t b, int64_t e) {
        for (int64_t n = b; n < e; ++n) {
          for (int64_t oc = 0; oc < d.o; ++oc) {
            ForTaps(
                d, n, oc,
                [&](int64_t n, int64_t oc, int64_t c, int64_t cl, int64_t ki,
                    int64_t kj, int64_t y, int64_t x, int64_t ih, int64_t iw) {
                  gi[((n * d.c + c) * d.h + ih) * d.w + iw] +=
                      g[((n * d.o + oc) * d.oh + y) * d.ow + x] *
                      wt[((oc * cg + cl) * d.kh + ki) * d.kw + kj];
                });
          }
        }
      });
}

template <typename T>
void ConvWeightGrad(const ConvDims& d, const T* g, const T* img, T* gw) {
  const int64_t cg = d.c / d.groups;
  cpu::ParallelFor(
      d.o, d.n * d.oh * d.ow * cg * d.kh * d.kw, [&](int64_t b, int64_t e) {
        for (int64_t oc = b; oc < e; ++oc) {
          for (int64_t n = 0; n < d.n; ++n) {
            ForTaps(
                d, n, oc,
                [&](int64_t n, int64_t oc, int64_t c, int64_t cl, int64_t ki,
                    int64_t kj, int64_t y, int64_t x, int64_t ih, int64_t iw) {
                  gw[((oc * cg + cl) * d.kh + ki) * d.kw + kj] +=
                      g[((n * d.o + oc) * d.oh + y) * d.ow + x] *
                      img[((n * d.c + c) * d.h + ih) * d.w + iw];
                });
          }
        }
      });
}

template <bool kWeight>
absl::Status CpuConvGrad(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor g, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor other, Contiguous(in[1], ctx));
  TD_RETURN_IF_ERROR(cpu::Fill(out[0].view(), 0.0));
  const ConvDims d =
      kWeight ? Dims(g.shape(), other.shape(), out[0].shape(), attrs)
              : Dims(g.shape(), out[0].shape(), other.shape(), attrs);
  auto run = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* gp = static_cast<const T*>(g.data());
    const T* op = static_cast<const T*>(other.data());
    T* o = static_cast<T*>(out[0].data());
    if (kWeight) {
      ConvWeightGrad<T>(d, gp, op, o);
    } else {
      ConvInputGrad<T>(d, gp, op, o);
    }
  };
  if (g.dtype() == DType::kFloat64) {
    run(static_cast<double*>(nullptr));
  } else {
    run(static_cast<float*>(nullptr));
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------------ pools
enum class Pool { kMax, kAvg, kAdaptive };

template <Pool kPool>
Specs InferPoolGrad(absl::Span<const Tensor> in, const Attrs&,
                    const OpContext&) {
  TD_RETURN_IF_ERROR(CheckGradInputs(in, 3, 4));
  if (in[0].ndim() != in[1].ndim()) {
    return absl::InvalidArgumentError("grad and input ranks differ");
  }
  return std::vector<TensorSpec>{
      {in[1].dtype(), in[1].shape(), in[1].device()}};
}

template <typename T, Pool kPool>
void PoolGradPlane(const T* g, const T* x, T* gi, int64_t h, int64_t w,
                   int64_t oh, int64_t ow, const Win& win, bool include_pad) {
  for (int64_t y = 0; y < oh; ++y) {
    for (int64_t xo = 0; xo < ow; ++xo) {
      const T gv = g[y * ow + xo];
      int64_t h0, h1, w0, w1;
      if (kPool == Pool::kAdaptive) {
        h0 = (y * h) / oh, h1 = ((y + 1) * h + oh - 1) / oh;
        w0 = (xo * w) / ow, w1 = ((xo + 1) * w + ow - 1) / ow;
        const T share = gv / static_cast<T>((h1 - h0) * (w1 - w0));
        for (int64_t i = h0; i < h1; ++i)
          for (int64_t j = w0; j < w1; ++j) gi[i * w + j] += share;
        continue;
      }
      h0 = y * win.sh - win.ph, w0 = xo * win.sw - win.pw;
      if (kPool == Pool::kMax) {
        int64_t best = -1;
        T best_v = -std::numeric_limits<T>::infinity();
        for (int64_t ki = 0; ki < win.kh; ++ki) {
          const int64_t i = h0 + ki * win.dh;
          if (i < 0 || i >= h) continue;
          for (int64_t kj = 0; kj < win.kw; ++kj) {
            const int64_t j = w0 + kj * win.dw;
            if (j < 0 || j >= w) continue;
            const T v = x[i * w + j];
            if (best < 0 || v > best_v || std::isnan(v)) {
              best = i * w + j, best_v = v;
              if (std::isnan(v)) break;
            }
          }
        }
        if (best >= 0) gi[best] += gv;
        continue;
      }
      h1 = std::min(h0 + win.kh, h + win.ph);
      w1 = std::min(w0 + win.kw, w + win.pw);
      const int64_t padded = (h1 - h0) * (w1 - w0);
      const int64_t hs = std::max<int64_t>(h0, 0),
                    ws = std::max<int64_t>(w0, 0);
      const int64_t he = std::min(h1, h), we = std::min(w1, w);
      const int64_t count = include_pad ? padded : (he - hs) * (we - ws);
      if (count <= 0) continue;
      const T share = gv / static_cast<T>(count);
      for (int64_t i = hs; i < he; ++i)
        for (int64_t j = ws; j < we; ++j) gi[i * w + j] += share;
    }
  }
}

template <Pool kPool>
absl::Status CpuPoolGrad(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor g, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[1], ctx));
  TD_RETURN_IF_ERROR(cpu::Fill(out[0].view(), 0.0));
  const int r = x.ndim();
  const int64_t h = x.shape()[r - 2], w = x.shape()[r - 1];
  const int64_t oh = g.shape()[r - 2], ow = g.shape()[r - 1];
  const int64_t planes = h * w == 0 ? 0 : x.numel() / (h * w);
  Win win{1, 1, 1, 1, 0, 0};
  bool include_pad = true;
  if (kPool != Pool::kAdaptive) {
    const I& k = attrs.Ints("kernel_size");
    win = WindowFrom(attrs, At(k, 0, 1), At(k, 1, 1));
    if (kPool == Pool::kAvg) include_pad = attrs.Bool("count_include_pad");
  }
  auto run = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* gp = static_cast<const T*>(g.data());
    const T* xp = static_cast<const T*>(x.data());
    T* o = static_cast<T*>(out[0].data());
    cpu::ParallelFor(planes, h * w + oh * ow, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        PoolGradPlane<T, kPool>(gp + p * oh * ow, xp + p * h * w, o + p * h * w,
                                h, w, oh, ow, win, include_pad);
      }
    });
  };
  if (g.dtype() == DType::kFloat64) {
    run(static_cast<double*>(nullptr));
  } else {
    run(static_cast<float*>(nullptr));
  }
  return absl::OkStatus();
}

std::vector<AttrSpec> ConvAttrs(const char* size) {
  return {Required(size, AttrType::kInts),
          Optional("stride", AttrType::kInts, I{1}),
          Optional("padding", AttrType::kInts, I{0}),
          Optional("dilation", AttrType::kInts, I{1}),
          Optional("groups", AttrType::kInt, int64_t{1})};
}

OpDef Internal(OpDef def) {
  def.differentiable = false;
  return def;
}

}  // namespace

std::vector<OpDef> ConvGradOps() {
  std::vector<OpDef> ops;
  OpDef ci =
      Internal(MakeOp("conv2d_backward_input", 2, 2, ConvAttrs("input_size"),
                      "The gradient of conv2d's input from its output "
                      "gradient and weight (used by autograd)."));
  ci.infer = InferConvInput;
  ci.cpu = CpuConvGrad<false>;
  ci.examples = {
      Example({{2, 6, 3, 5}, {6, 2, 3, 3}}, {{"input_size", I{2, 4, 5, 5}},
                                             {"stride", I{2, 1}},
                                             {"padding", I{1}},
                                             {"groups", int64_t{2}}})};
  ops.push_back(std::move(ci));
  OpDef cw =
      Internal(MakeOp("conv2d_backward_weight", 2, 2, ConvAttrs("weight_size"),
                      "The gradient of conv2d's weight from its output "
                      "gradient and input (used by autograd)."));
  cw.infer = InferConvWeight;
  cw.cpu = CpuConvGrad<true>;
  cw.examples = {
      Example({{2, 6, 3, 5}, {2, 4, 5, 5}}, {{"weight_size", I{6, 2, 3, 3}},
                                             {"stride", I{2, 1}},
                                             {"padding", I{1}},
                                             {"groups", int64_t{2}}})};
  ops.push_back(std::move(cw));
  std::vector<AttrSpec> max_attrs, avg_attrs;
  for (const OpDef& def : ConvOps()) {
    if (def.name == "max_pool2d") max_attrs = def.attrs;
    if (def.name == "avg_pool2d") avg_attrs = def.attrs;
  }
  OpDef mb = Internal(MakeOp("max_pool2d_backward", 2, 2, max_attrs,
                             "The gradient of max_pool2d's input from the "
                             "output gradient and input (used by autograd)."));
  mb.infer = InferPoolGrad<Pool::kMax>;
  mb.cpu = CpuPoolGrad<Pool::kMax>;
  mb.examples = {Example({{1, 2, 3, 3}, {1, 2, 5, 5}},
                         {{"kernel_size", I{2}}, {"ceil_mode", true}})};
  ops.push_back(std::move(mb));
  OpDef ab = Internal(MakeOp("avg_pool2d_backward", 2, 2, avg_attrs,
                             "The gradient of avg_pool2d's input from the "
                             "output gradient and input (used by autograd)."));
  ab.infer = InferPoolGrad<Pool::kAvg>;
  ab.cpu = CpuPoolGrad<Pool::kAvg>;
  ab.examples = {
      Example({{1, 2, 3, 3}, {1, 2, 5, 5}},
              {{"kernel_size", I{3}}, {"padding", I{1}}, {"stride", I{2}}})};
  ops.push_back(std::move(ab));
  OpDef aa = Internal(MakeOp("adaptive_avg_pool2d_backward", 2, 2, {},
                             "The gradient of adaptive_avg_pool2d's input "
                             "(used by autograd)."));
  aa.infer = InferPoolGrad<Pool::kAdaptive>;
  aa.cpu = CpuPoolGrad<Pool::kAdaptive>;
  aa.examples = {Example({{1, 2, 2, 3}, {1, 2, 5, 7}})};
  ops.push_back(std::move(aa));
  return ops;
}

}  // namespace tensord
