#include "kernels/cpu/embedding.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/dtype.h"

namespace tensord {
namespace cpu {
namespace {

// The indices widened to int64 (int32 tables are copied once: n entries),
// each checked against [0, rows).
absl::Status ReadIndices(const StridedView& index, int64_t rows,
                         std::vector<int64_t>* keys) {
  const int64_t n = index.numel();
  keys->resize(n);
  if (index.dtype == DType::kInt64) {
    std::memcpy(keys->data(), index.ptr<const int64_t>(), n * sizeof(int64_t));
  } else if (index.dtype == DType::kInt32) {
    const int32_t* p = index.ptr<const int32_t>();
    for (int64_t i = 0; i < n; ++i) (*keys)[i] = p[i];
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding_backward: indices must be int64 or int32, got ",
                     DTypeName(index.dtype)));
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = (*keys)[i];
    if (k < 0 || k >= rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "embedding_backward: index ", k, " (at position ", i,
          ") is out of range for a weight of ", rows, " rows"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EmbeddingDenseBackward(const StridedView& grad,
                                    const StridedView& index,
                                    int64_t padding_idx,
                                    bool scale_grad_by_freq,
                                    const StridedView& out) {
  const int64_t rows = out.sizes[0];
  const int64_t d = rows == 0 ? 0 : out.numel() / rows;
  const int64_t n = index.numel();
  std::vector<int64_t> keys;
  absl::Status s = ReadIndices(index, rows, &keys);
  if (!s.ok()) return s;
  std::vector<int64_t> count;
  if (scale_grad_by_freq) {
    count.assign(rows, 0);
    for (int64_t k : keys) ++count[k];
  }
  // Blocks of ~32 KB of the table; the grad rows of each block's indices
  // listed in index order (a stable counting sort; padding_idx left out).
  const int64_t row_bytes =
      std::max<int64_t>(d, 1) * static_cast<int64_t>(ItemSize(out.dtype));
  const int64_t block = std::max<int64_t>(1, (32 << 10) / row_bytes);
  const int64_t blocks = (rows + block - 1) / block;
  std::vector<int64_t> start(blocks + 1, 0), order(n);
  for (int64_t k : keys) {
    if (k != padding_idx) ++start[k / block + 1];
  }
  for (int64_t b = 0; b < blocks; ++b) start[b + 1] += start[b];
  {
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n; ++i) {
      if (keys[i] != padding_idx) order[next[keys[i] / block]++] = i;
    }
  }
  return DispatchFloat(out.dtype, "embedding_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* g = grad.ptr<const T>();
    T* o = out.ptr<T>();
    const int64_t per_block = block * d + (blocks == 0 ? 0 : n * d / blocks);
    ParallelFor(blocks, std::max<int64_t>(per_block, 1),
                [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        const int64_t lo = b * block, hi = std::min(rows, lo + block);
        std::memset(o + lo * d, 0, (hi - lo) * d * sizeof(T));
        for (int64_t p = start[b]; p < start[b + 1]; ++p) {
          const int64_t i = order[p], k = keys[i];
          T* row = o + k * d;
          const T* from = g + i * d;
          if (scale_grad_by_freq) {  // as ATen: times 1 / count
            const T c = static_cast<T>(1.0 / static_cast<double>(count[k]));
            for (int64_t j = 0; j < d; ++j) row[j] += from[j] * c;
          } else {
            for (int64_t j = 0; j < d; ++j) row[j] += from[j];
          }
        }
      }
    });
  });
}

}  // namespace cpu
}  // namespace tensord
