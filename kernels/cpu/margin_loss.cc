#include "kernels/cpu/margin_loss.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

struct Rows {
  int64_t n, c;  // rows, classes (input's last dim; 1-d input: one row)
};

Rows RowsOf(const StridedView& input) {
  const int64_t c = input.ndim == 0 ? 1 : input.sizes[input.ndim - 1];
  return {c == 0 ? 0 : input.numel() / c, c};
}

// The factor of row t's gradient: grad_output[t] (kNone) or its one value,
// over N for the mean.
template <typename T>
T RowScale(const T* go, int64_t t, int64_t n, LossReduction r) {
  if (r == LossReduction::kNone) return go[t];
  return r == LossReduction::kMean ? go[0] / static_cast<T>(n) : go[0];
}

template <typename T>
void MultiMargin(const T* go, const T* x, const int64_t* y, const T* w, int p,
                 T margin, LossReduction r, Rows d, T* gx) {
  ParallelFor(d.n, d.c, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const T* row = x + t * d.c;
      T* g = gx + t * d.c;
      const int64_t target = y[t];
      const T scale = RowScale(go, t, d.n, r) / static_cast<T>(d.c) *
                      (w == nullptr ? T(1) : w[target]);
      T sum = 0;
      for (int64_t i = 0; i < d.c; ++i) {
        const T z = margin - row[target] + row[i];
        g[i] = 0;
        if (i == target || !(z > 0)) continue;
        const T h = p == 1 ? scale : 2 * z * scale;
        g[i] = h;
        sum -= h;
      }
      g[target] = sum;
    }
  });
}

template <typename T>
void Multilabel(const T* go, const T* x, const int64_t* y, const T* is_target,
                LossReduction r, Rows d, T* gx) {
  ParallelFor(d.n, d.c * d.c, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const T* row = x + t * d.c;
      const int64_t* targets = y + t * d.c;
      const T* is_t = is_target + t * d.c;
      T* g = gx + t * d.c;
      std::fill(g, g + d.c, T(0));
      const T scale = RowScale(go, t, d.n, r) / static_cast<T>(d.c);
      for (int64_t k = 0; k < d.c && targets[k] >= 0; ++k) {
        const int64_t j = targets[k];
        for (int64_t i = 0; i < d.c; ++i) {
          if (is_t[i] != T(0)) continue;
          const T z = 1 - row[j] + row[i];
          if (z > 0) {
            g[j] -= scale;
            g[i] += scale;
          }
        }
      }
    }
  });
}

// Row losses, written per row or reduced in row order (ATen's sum).
template <typename T>
void Store(const std::vector<T>& rows, LossReduction r, T* out) {
  if (r == LossReduction::kNone) {
    std::copy(rows.begin(), rows.end(), out);
    return;
  }
  T sum = 0;
  for (T v : rows) sum += v;
  out[0] = r == LossReduction::kMean ? sum / static_cast<T>(rows.size()) : sum;
}

template <typename T>
void MultiMarginForward(const T* x, const int64_t* y, const T* w, int p,
                        T margin, LossReduction r, Rows d, T* out) {
  std::vector<T> rows(d.n);
  ParallelFor(d.n, d.c, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const T* row = x + t * d.c;
      const int64_t target = y[t];
      T sum = 0;
      for (int64_t i = 0; i < d.c; ++i) {
        if (i == target) continue;
        const T z = margin - row[target] + row[i];
        if (!(z > 0)) continue;
        T h = p == 1 ? z : z * z;
        if (w != nullptr) h *= w[target];
        sum += h;
      }
      rows[t] = sum / static_cast<T>(d.c);
    }
  });
  Store(rows, r, out);
}

template <typename T>
void MultilabelForward(const T* x, const int64_t* y, LossReduction r, Rows d,
                       T* out, T* is_target) {
  std::vector<T> rows(d.n);
  ParallelFor(d.n, d.c * d.c, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const T* row = x + t * d.c;
      const int64_t* targets = y + t * d.c;
      T* is_t = is_target + t * d.c;
      std::fill(is_t, is_t + d.c, T(0));
      for (int64_t k = 0; k < d.c && targets[k] >= 0; ++k) is_t[targets[k]] = 1;
      T sum = 0;
      for (int64_t k = 0; k < d.c && targets[k] >= 0; ++k) {
        const T xj = row[targets[k]];
        for (int64_t i = 0; i < d.c; ++i) {
          if (is_t[i] != T(0)) continue;
          const T z = 1 - xj + row[i];
          if (z > 0) sum += z;
        }
      }
      rows[t] = sum / static_cast<T>(d.c);
    }
  });
  Store(rows, r, out);
}

absl::Status CheckMultiTargets(const int64_t* y, Rows d, const char* op) {
  for (int64_t t = 0; t < d.n; ++t) {
    if (y[t] < 0 || y[t] >= d.c) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": target ", y[t],
                       " is out of bounds: ", "it must be in [0, ", d.c, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLabelTargets(const int64_t* y, Rows d, const char* op) {
  for (int64_t k = 0; k < d.n * d.c; ++k) {
    if (y[k] < -1 || y[k] >= d.c) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": target ", y[k],
                       " is out of bounds: it must be in [-1, ", d.c, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MultiMarginLoss(const StridedView& input,
                             const StridedView& target,
                             const StridedView& weight, int p, double margin,
                             LossReduction reduction, const StridedView& loss) {
  TD_RETURN_IF_ERROR(RequireFloat(input.dtype, "multi_margin_loss"));
  const Rows d = RowsOf(input);
  const int64_t* y = target.ptr<const int64_t>();
  TD_RETURN_IF_ERROR(CheckMultiTargets(y, d, "multi_margin_loss"));
  if (input.dtype == DType::kFloat64) {
    MultiMarginForward<double>(
        input.ptr<const double>(), y,
        weight.data ? weight.ptr<const double>() : nullptr, p, margin,
        reduction, d, loss.ptr<double>());
  } else {
    MultiMarginForward<float>(input.ptr<const float>(), y,
                              weight.data ? weight.ptr<const float>() : nullptr,
                              p, static_cast<float>(margin), reduction, d,
                              loss.ptr<float>());
  }
  return absl::OkStatus();
}

absl::Status MultilabelMarginLoss(const StridedView& input,
                                  const StridedView& target,
                                  LossReduction reduction,
                                  const StridedView& loss,
                                  const StridedView& is_target) {
  TD_RETURN_IF_ERROR(RequireFloat(input.dtype, "multilabel_margin_loss"));
  const Rows d = RowsOf(input);
  const int64_t* y = target.ptr<const int64_t>();
  TD_RETURN_IF_ERROR(CheckLabelTargets(y, d, "multilabel_margin_loss"));
  if (input.dtype == DType::kFloat64) {
    MultilabelForward<double>(input.ptr<const double>(), y, reduction, d,
                              loss.ptr<double>(), is_target.ptr<double>());
  } else {
    MultilabelForward<float>(input.ptr<const float>(), y, reduction, d,
                             loss.ptr<float>(), is_target.ptr<float>());
  }
  return absl::OkStatus();
}

absl::Status MultiMarginLossBackward(const StridedView& grad_output,
                                     const StridedView& input,
                                     const StridedView& target,
                                     const StridedView& weight, int p,
                                     double margin, LossReduction reduction,
                                     const StridedView& grad_input) {
  TD_RETURN_IF_ERROR(RequireFloat(input.dtype, "multi_margin_loss_backward"));
  const Rows d = RowsOf(input);
  const int64_t* y = target.ptr<const int64_t>();
  TD_RETURN_IF_ERROR(CheckMultiTargets(y, d, "multi_margin_loss_backward"));
  if (input.dtype == DType::kFloat64) {
    MultiMargin<double>(grad_output.ptr<const double>(),
                        input.ptr<const double>(), y,
                        weight.data ? weight.ptr<const double>() : nullptr, p,
                        margin, reduction, d, grad_input.ptr<double>());
  } else {
    MultiMargin<float>(grad_output.ptr<const float>(), input.ptr<const float>(),
                       y, weight.data ? weight.ptr<const float>() : nullptr, p,
                       static_cast<float>(margin), reduction, d,
                       grad_input.ptr<float>());
  }
  return absl::OkStatus();
}

absl::Status MultilabelMarginLossBackward(const StridedView& grad_output,
                                          const StridedView& input,
                                          const StridedView& target,
                                          const StridedView& is_target,
                                          LossReduction reduction,
                                          const StridedView& grad_input) {
  TD_RETURN_IF_ERROR(
      RequireFloat(input.dtype, "multilabel_margin_loss_backward"));
  const Rows d = RowsOf(input);
  const int64_t* y = target.ptr<const int64_t>();
  TD_RETURN_IF_ERROR(
      CheckLabelTargets(y, d, "multilabel_margin_loss_backward"));
  if (input.dtype == DType::kFloat64) {
    Multilabel<double>(
        grad_output.ptr<const double>(), input.ptr<const double>(), y,
        is_target.ptr<const double>(), reduction, d, grad_input.ptr<double>());
  } else {
    Multilabel<float>(grad_output.ptr<const float>(), input.ptr<const float>(),
                      y, is_target.ptr<const float>(), reduction, d,
                      grad_input.ptr<float>());
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace tensord
