#include "kernels/cpu/embedding_bag.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

// Every value in [0, limit) (or -1 where `allow_none`), else the first bad
// one as INVALID_ARGUMENT.
absl::Status CheckRange(const int64_t* v, int64_t n, int64_t limit,
                        bool allow_none, const char* what) {
  for (int64_t i = 0; i < n; ++i) {
    if ((v[i] < 0 && !(allow_none && v[i] == -1)) || v[i] >= limit) {
      return absl::InvalidArgumentError(
          absl::StrCat("embedding_bag: ", what, "[", i, "] is ", v[i],
                       ", not in the valid range [0, ", limit, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOffsets(const int64_t* off, int64_t num_offsets, int64_t n) {
  if (num_offsets > 0 && off[0] != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding_bag: offsets[0] has to be 0, i.e., the first sequence in "
        "the mini-batch has to start from position 0. However, got ",
        off[0]));
  }
  for (int64_t b = 1; b < num_offsets; ++b) {
    if (off[b] < off[b - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "embedding_bag: offsets must not decrease, got offsets[", b - 1,
          "] = ", off[b - 1], " and offsets[", b, "] = ", off[b]));
    }
  }
  if (num_offsets > 0 && off[num_offsets - 1] > n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding_bag: offsets[-1] can not be greater than input's length ", n,
        " but got offsets[-1] of ", off[num_offsets - 1]));
  }
  return absl::OkStatus();
}

template <typename T>
const T* OrNull(const StridedView& v) {
  return v.data == nullptr ? nullptr : v.ptr<const T>();
}

// Bags split over the pool: each range writes its own output rows and
// offset2bag entries (Note [Embedding bag geometry]).
template <typename T>
void Forward(const StridedView& weight, const int64_t* idx, const int64_t* off,
             int64_t num_offsets, int64_t n, const T* psw, const BagOptions& o,
             const StridedView& output, int64_t* o2b, int64_t* bag_size,
             int64_t* max_idx) {
  const int64_t dim = weight.sizes[1], bags = output.sizes[0];
  const T* w = weight.ptr<const T>();
  T* out = output.ptr<T>();
  std::fill(o2b, o2b + n, int64_t{-1});
  std::fill(bag_size, bag_size + num_offsets, int64_t{0});
  const int64_t per_bag = std::max<int64_t>(1, n / std::max<int64_t>(bags, 1));
  ParallelFor(bags, per_bag * dim, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t start = off[b], end = b + 1 < num_offsets ? off[b + 1] : n;
      T* row = out + b * dim;
      int64_t* arg = max_idx == nullptr ? nullptr : max_idx + b * dim;
      std::fill(row, row + dim, T(0));
      if (arg != nullptr) std::fill(arg, arg + dim, int64_t{-1});
      int64_t count = 0;
      for (int64_t i = start; i < end; ++i) {
        o2b[i] = b;
        if (idx[i] == o.padding_idx) continue;
        const T* src = w + idx[i] * dim;
        if (o.mode == BagMode::kMax) {
          for (int64_t d = 0; d < dim; ++d) {
            if (count == 0 || src[d] > row[d]) {
              row[d] = src[d];
              arg[d] = idx[i];
            }
          }
        } else {
          const T scale = psw == nullptr ? T(1) : psw[i];
          for (int64_t d = 0; d < dim; ++d) row[d] += scale * src[d];
        }
        ++count;
      }
      if (o.mode == BagMode::kMean && count > 0) {
        for (int64_t d = 0; d < dim; ++d) row[d] /= static_cast<T>(count);
      }
      bag_size[b] = count;
    }
  });
}

// Columns split over the pool: each range owns its columns of grad_weight
// and adds in position order, so results do not depend on the pool.
template <typename T>
void DenseBackward(const StridedView& grad, const int64_t* idx, int64_t n,
                   const int64_t* o2b, const int64_t* bag_size,
                   const int64_t* max_idx, const T* psw, const BagOptions& o,
                   bool by_freq, const StridedView& grad_weight) {
  const int64_t rows = grad_weight.sizes[0], dim = grad_weight.sizes[1];
  const int64_t bags = grad.sizes[0];
  const T* g = grad.ptr<const T>();
  T* gw = grad_weight.ptr<T>();
  std::fill(gw, gw + rows * dim, T(0));
  if (o.mode == BagMode::kMax) {
    ParallelFor(dim, bags, [&](int64_t lo, int64_t hi) {
      for (int64_t b = 0; b < bags; ++b) {
        for (int64_t d = lo; d < hi; ++d) {
          const int64_t m = max_idx[b * dim + d];
          if (m >= 0) gw[m * dim + d] += g[b * dim + d];
        }
      }
    });
    return;
  }
  std::vector<int64_t> freq(by_freq ? rows : 0, 0);
  for (int64_t i = 0; by_freq && i < n; ++i) ++freq[idx[i]];
  // Each position's factor once, not per column.
  std::vector<T> scale(n, T(0));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = o2b[i];
    if (b < 0 || idx[i] == o.padding_idx) continue;
    T s = psw == nullptr ? T(1) : psw[i];
    if (o.mode == BagMode::kMean) s /= static_cast<T>(bag_size[b]);
    if (by_freq) s /= static_cast<T>(freq[idx[i]]);
    scale[i] = s;
  }
  ParallelFor(dim, n, [&](int64_t lo, int64_t hi) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t b = o2b[i];
      if (b < 0 || idx[i] == o.padding_idx) continue;
      const T* src = g + b * dim;
      T* dst = gw + idx[i] * dim;
      for (int64_t d = lo; d < hi; ++d) dst[d] += scale[i] * src[d];
    }
  });
}

template <typename T>
void PerSampleWeightsBackward(const StridedView& grad,
                              const StridedView& weight, const int64_t* idx,
                              const int64_t* o2b, int64_t padding_idx,
                              const StridedView& out) {
  const int64_t n = out.sizes[0], dim = weight.sizes[1];
  const T* g = grad.ptr<const T>();
  const T* w = weight.ptr<const T>();
  T* r = out.ptr<T>();
  ParallelFor(n, dim, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      T acc = 0;
      if (o2b[i] >= 0 && idx[i] != padding_idx) {
        const T* a = g + o2b[i] * dim;
        const T* b = w + idx[i] * dim;
        for (int64_t d = 0; d < dim; ++d) acc += a[d] * b[d];
      }
      r[i] = acc;
    }
  });
}

}  // namespace

absl::Status EmbeddingBag(const StridedView& weight, const StridedView& indices,
                          const StridedView& offsets,
                          const StridedView& per_sample_weights,
                          const BagOptions& options, const StridedView& output,
                          const StridedView& offset2bag,
                          const StridedView& bag_size,
                          const StridedView& max_indices) {
  TD_RETURN_IF_ERROR(RequireFloat(weight.dtype, "embedding_bag"));
  const int64_t n = indices.sizes[0], num_offsets = offsets.sizes[0];
  const int64_t* idx = indices.ptr<const int64_t>();
  const int64_t* off = offsets.ptr<const int64_t>();
  TD_RETURN_IF_ERROR(CheckOffsets(off, num_offsets, n));
  TD_RETURN_IF_ERROR(CheckRange(idx, n, weight.sizes[0], false, "indices"));
  int64_t* max_idx =
      options.mode == BagMode::kMax ? max_indices.ptr<int64_t>() : nullptr;
  if (weight.dtype == DType::kFloat64) {
    Forward<double>(weight, idx, off, num_offsets, n,
                    OrNull<double>(per_sample_weights), options, output,
                    offset2bag.ptr<int64_t>(), bag_size.ptr<int64_t>(),
                    max_idx);
  } else {
    Forward<float>(weight, idx, off, num_offsets, n,
                   OrNull<float>(per_sample_weights), options, output,
                   offset2bag.ptr<int64_t>(), bag_size.ptr<int64_t>(), max_idx);
  }
  return absl::OkStatus();
}

absl::Status EmbeddingBagDenseBackward(
    const StridedView& grad, const StridedView& indices,
    const StridedView& offset2bag, const StridedView& bag_size,
    const StridedView& max_indices, const StridedView& per_sample_weights,
    const BagOptions& options, bool scale_grad_by_freq,
    const StridedView& grad_weight) {
  TD_RETURN_IF_ERROR(RequireFloat(grad.dtype, "_embedding_bag_dense_backward"));
  const int64_t n = indices.sizes[0], rows = grad_weight.sizes[0];
  const int64_t bags = grad.sizes[0];
  const int64_t* idx = indices.ptr<const int64_t>();
  const int64_t* o2b = offset2bag.ptr<const int64_t>();
  const int64_t* sizes = bag_size.ptr<const int64_t>();
  const int64_t* max_idx = options.mode == BagMode::kMax
                               ? max_indices.ptr<const int64_t>()
                               : nullptr;
  if (max_idx != nullptr) {
    TD_RETURN_IF_ERROR(
        CheckRange(max_idx, max_indices.numel(), rows, true, "max_indices"));
  } else {
    TD_RETURN_IF_ERROR(CheckRange(idx, n, rows, false, "indices"));
    TD_RETURN_IF_ERROR(CheckRange(o2b, n, bags, true, "offset2bag"));
  }
  if (grad.dtype == DType::kFloat64) {
    DenseBackward<double>(grad, idx, n, o2b, sizes, max_idx,
                          OrNull<double>(per_sample_weights), options,
                          scale_grad_by_freq, grad_weight);
  } else {
    DenseBackward<float>(grad, idx, n, o2b, sizes, max_idx,
                         OrNull<float>(per_sample_weights), options,
                         scale_grad_by_freq, grad_weight);
  }
  return absl::OkStatus();
}

absl::Status EmbeddingBagPerSampleWeightsBackward(
    const StridedView& grad, const StridedView& weight,
    const StridedView& indices, const StridedView& offset2bag,
    int64_t padding_idx, const StridedView& grad_weights) {
  TD_RETURN_IF_ERROR(
      RequireFloat(grad.dtype, "_embedding_bag_per_sample_weights_backward"));
  const int64_t n = indices.sizes[0];
  const int64_t* idx = indices.ptr<const int64_t>();
  const int64_t* o2b = offset2bag.ptr<const int64_t>();
  TD_RETURN_IF_ERROR(CheckRange(idx, n, weight.sizes[0], false, "indices"));
  TD_RETURN_IF_ERROR(CheckRange(o2b, n, grad.sizes[0], true, "offset2bag"));
  if (grad.dtype == DType::kFloat64) {
    PerSampleWeightsBackward<double>(grad, weight, idx, o2b, padding_idx,
                                     grad_weights);
  } else {
    PerSampleWeightsBackward<float>(grad, weight, idx, o2b, padding_idx,
                                    grad_weights);
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace tensord
