#include "runtime/ops/pool_geometry.h"

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/op_helpers.h"

namespace tensord {
namespace {

// a / b rounded toward -infinity (b > 0): PyTorch's div_rtn, so an input
// smaller than the kernel gives an output size of 0, an error, not 1.
int64_t FloorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

int64_t PoolOut(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d,
                bool ceil) {
  const int64_t span = size + 2 * p - d * (k - 1) - 1;
  int64_t out = FloorDiv(ceil ? span + s - 1 : span, s) + 1;
  if (ceil && (out - 1) * s >= size + p) --out;
  return out;
}

// A contiguous view [sizes[0], ..., sizes[3]] of t's data.
StridedView Contiguous4d(const Tensor& t, int64_t a, int64_t b, int64_t c,
                         int64_t d) {
  StridedView v = t.view();
  v.ndim = 4;
  const int64_t sizes[4] = {a, b, c, d};
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    v.sizes[i] = sizes[i];
    v.strides[i] = stride;
    stride *= sizes[i];
  }
  return v;
}

}  // namespace

absl::StatusOr<std::pair<int64_t, int64_t>> IntPairAttr(
    const Attrs& attrs, const char* name, std::pair<int64_t, int64_t> fallback,
    int64_t min_value) {
  const auto& v = attrs.Ints(name);
  std::pair<int64_t, int64_t> p = fallback;
  if (v.size() == 1) {
    p = {v[0], v[0]};
  } else if (v.size() == 2) {
    p = {v[0], v[1]};
  } else if (!v.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " must be one int or a pair, got ", ShapeToString(v)));
  }
  if (p.first < min_value || p.second < min_value) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " must be >= ", min_value, ", got ", ShapeToString(v)));
  }
  return p;
}

absl::Status CheckPoolInput(const Tensor& x, const char* what,
                            bool int64_ok) {
  if (!(int64_ok && x.dtype() == DType::kInt64)) {
    TD_RETURN_IF_ERROR(RequireFloating(x, what));
  }
  if (x.ndim() != 3 && x.ndim() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected 3D or 4D input, got shape ",
                     ShapeToString(x.shape())));
  }
  return absl::OkStatus();
}

std::vector<AttrSpec> MaxPoolAttrs() {
  using I = std::vector<int64_t>;
  return {Required("kernel_size", AttrType::kInts),
          Optional("stride", AttrType::kInts, I{}),
          Optional("padding", AttrType::kInts, I{0}),
          Optional("dilation", AttrType::kInts, I{1}),
          Optional("ceil_mode", AttrType::kBool, false)};
}

absl::StatusOr<cpu::Window2d> PlanPool2d(const Tensor& x, const Attrs& attrs,
                                         bool max_pool, const char* what) {
  TD_RETURN_IF_ERROR(CheckPoolInput(x, what, /*int64_ok=*/!max_pool));
  for (int d = x.ndim() - 3; d < x.ndim(); ++d) {
    if (x.shape()[d] == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what,
          ": expected a 3D or 4D input with non-zero sizes after the "
          "optional batch dim, got shape ",
          ShapeToString(x.shape())));
    }
  }
  TD_ASSIGN_OR_RETURN(auto k, IntPairAttr(attrs, "kernel_size", {0, 0}, 1));
  TD_ASSIGN_OR_RETURN(auto s, IntPairAttr(attrs, "stride", k, 1));
  TD_ASSIGN_OR_RETURN(auto pad, IntPairAttr(attrs, "padding", {0, 0}, 0));
  std::pair<int64_t, int64_t> d{1, 1};
  if (max_pool) {
    TD_ASSIGN_OR_RETURN(d, IntPairAttr(attrs, "dilation", {1, 1}, 1));
  }
  if (pad.first > k.first / 2 || pad.second > k.second / 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": pad should be at most half of kernel size, but got pad=(",
        pad.first, ", ", pad.second, "), kernel_size=(", k.first, ", ",
        k.second, ")"));
  }
  const int64_t h = x.shape()[x.ndim() - 2], w = x.shape()[x.ndim() - 1];
  const bool ceil = attrs.Bool("ceil_mode");
  cpu::Window2d win{k.first,
                    k.second,
                    s.first,
                    s.second,
                    pad.first,
                    pad.second,
                    d.first,
                    d.second,
                    PoolOut(h, k.first, s.first, pad.first, d.first, ceil),
                    PoolOut(w, k.second, s.second, pad.second, d.second, ceil)};
  if (win.oh <= 0 || win.ow <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": output size ", win.oh, "x", win.ow, " is too small for input ",
        ShapeToString(x.shape()), " (kernel_size=(", k.first, ", ", k.second,
        "), dilation=(", d.first, ", ", d.second, "), padding=(", pad.first,
        ", ", pad.second, "))"));
  }
  return win;
}

Shape PoolShape(const Tensor& x, int64_t oh, int64_t ow) {
  Shape s = x.shape();
  s[s.size() - 2] = oh;
  s[s.size() - 1] = ow;
  return s;
}

StridedView As4d(const Tensor& t) {
  StridedView v = t.view();
  if (v.ndim == 3) {
    for (int i = 3; i > 0; --i) {
      v.sizes[i] = v.sizes[i - 1], v.strides[i] = v.strides[i - 1];
    }
    v.ndim = 4;
    v.sizes[0] = 1;
    v.strides[0] = v.sizes[1] * v.strides[1];
  }
  return v;
}

absl::StatusOr<Shape> PlanAdaptivePool(const Tensor& x, const Attrs& attrs,
                                       int spatial, const char* what) {
  TD_RETURN_IF_ERROR(RequireFloating(x, what));
  if (x.ndim() != spatial + 1 && x.ndim() != spatial + 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected ", spatial + 1, "D or ", spatial + 2,
                     "D input, got shape ", ShapeToString(x.shape())));
  }
  // As PyTorch: every size after the first (an unbatched input's channels
  // may be 0).
  for (int d = 1; d < x.ndim(); ++d) {
    if (x.shape()[d] == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what,
          ": expected input to have non-zero size for non-batch dimensions, "
          "got shape ",
          ShapeToString(x.shape())));
    }
  }
  std::vector<int64_t> size = attrs.Ints("output_size");
  if (size.size() == 1) size.assign(spatial, size[0]);
  if (static_cast<int>(size.size()) != spatial) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": output_size must have ", spatial, " elements, got ",
        ShapeToString(attrs.Ints("output_size"))));
  }
  Shape shape = x.shape();
  for (int i = 0; i < spatial; ++i) {
    if (size[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": elements of output_size must be >= 0, got ",
                       ShapeToString(size)));
    }
    shape[x.ndim() - spatial + i] = size[i];
  }
  return shape;
}

std::vector<AttrSpec> AvgPool3dAttrs() {
  using I = std::vector<int64_t>;
  return {Required("kernel_size", AttrType::kInts),
          Optional("stride", AttrType::kInts, I{}),
          Optional("padding", AttrType::kInts, I{0}),
          Optional("ceil_mode", AttrType::kBool, false),
          Optional("count_include_pad", AttrType::kBool, true),
          Optional("divisor_override", AttrType::kInt, int64_t{0})};
}

absl::StatusOr<AvgPool3dPlan> PlanAvgPool3d(const Tensor& x, const Attrs& attrs,
                                            const char* what) {
  if (x.dtype() != DType::kInt64) TD_RETURN_IF_ERROR(RequireFloating(x, what));
  if (x.ndim() != 4 && x.ndim() != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected 4D or 5D input, got shape ",
                     ShapeToString(x.shape())));
  }
  for (int d = 1; d < x.ndim(); ++d) {
    if (x.shape()[d] == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what,
          ": expected input to have non-zero size for non-batch dimensions, "
          "got shape ",
          ShapeToString(x.shape())));
    }
  }
  // kernel_size, stride, padding: one value or three (an empty stride:
  // kernel_size's), each at least its minimum.
  auto triple = [&](const char* name, const int64_t* fallback,
                    int64_t min_value, int64_t* out) -> absl::Status {
    const std::vector<int64_t>& v = attrs.Ints(name);
    if (v.size() != 0 && v.size() != 1 && v.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", name, " must be one int or three, got ",
                       ShapeToString(v)));
    }
    for (int d = 0; d < 3; ++d) {
      out[d] = v.empty() ? fallback[d] : v[v.size() == 1 ? 0 : d];
      if (out[d] < min_value) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": ", name, " must be >= ", min_value, ", got ",
                         ShapeToString(v)));
      }
    }
    return absl::OkStatus();
  };
  AvgPool3dPlan plan;
  cpu::AvgWindow3d& w = plan.window;
  const int64_t zeros[3] = {0, 0, 0};
  if (attrs.Ints("kernel_size").empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": kernel_size must be one int or three"));
  }
  TD_RETURN_IF_ERROR(triple("kernel_size", zeros, 1, w.kernel));
  TD_RETURN_IF_ERROR(triple("stride", w.kernel, 1, w.stride));
  TD_RETURN_IF_ERROR(triple("padding", zeros, 0, w.pad));
  w.count_include_pad = attrs.Bool("count_include_pad");
  w.divisor_override = attrs.Int("divisor_override");
  const bool ceil = attrs.Bool("ceil_mode");
  plan.shape = x.shape();
  for (int d = 0; d < 3; ++d) {
    if (w.pad[d] > w.kernel[d] / 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": pad should be at most half of kernel size, but got pad=",
          ShapeToString(attrs.Ints("padding")),
          ", kernel_size=", ShapeToString(attrs.Ints("kernel_size"))));
    }
    const int64_t size = x.shape()[x.ndim() - 3 + d];
    const int64_t out =
        PoolOut(size, w.kernel[d], w.stride[d], w.pad[d], 1, ceil);
    if (out <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": output size is too small for input ",
          ShapeToString(x.shape()),
          " (kernel_size=", ShapeToString(attrs.Ints("kernel_size")),
          ", padding=", ShapeToString(attrs.Ints("padding")), ")"));
    }
    plan.shape[x.ndim() - 3 + d] = out;
  }
  return plan;
}

StridedView AsVolumes(const Tensor& t, int spatial) {
  const Shape& s = t.shape();
  const int n = static_cast<int>(s.size());
  int64_t planes = 1;
  for (int i = 0; i < n - spatial; ++i) planes *= s[i];
  const int64_t d = spatial == 3 ? s[n - 3] : 1;
  return Contiguous4d(t, planes, d, s[n - 2], s[n - 1]);
}

StridedView AsFlatPlanes(const Tensor& t, int spatial) {
  const Shape& s = t.shape();
  const int n = static_cast<int>(s.size());
  int64_t planes = 1, plane = 1;
  for (int i = 0; i < n; ++i) (i < n - spatial ? planes : plane) *= s[i];
  return Contiguous4d(t, planes, 1, 1, plane);
}

}  // namespace tensord
