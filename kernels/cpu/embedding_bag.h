// embedding_bag (PyTorch's aten._embedding_bag) and its two backward ops on
// contiguous float32/float64 rows and int64 indices: bags of weight rows
// summed, averaged or max-reduced, with per-sample weights (sum only) and a
// padding index that is skipped. Index and offset values are data: each
// kernel checks them before it writes anything and refuses bad ones with
// INVALID_ARGUMENT (the row's caller is a tenant).
//
// Note [Embedding bag geometry]: bag b holds positions [offsets[b], end_b)
// of indices, end_b = offsets[b + 1] where that exists, else indices' length
// (the last bag without include_last_offset). With include_last_offset,
// positions past offsets[num_bags] are in no bag (offset2bag -1), as the sum
// of PyTorch's CPU kernel has it (its mean and max add them to the last bag).
// offsets[0] must be 0 and offsets must not decrease or pass indices' end.
// bag_size counts a bag's non-padding indices in every mode and has one
// entry per offset (the meta function's shape; an extra last entry is 0);
// max_indices holds the weight row that gave each maximum, -1 for a bag with
// none (empty or all padding: its output row is 0). The backward ops read
// these from the forward's outputs, so they agree with it by construction.
#ifndef TENSORD_KERNELS_CPU_EMBEDDING_BAG_H_
#define TENSORD_KERNELS_CPU_EMBEDDING_BAG_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// PyTorch's modes (EmbeddingBagMode).
enum class BagMode { kSum = 0, kMean = 1, kMax = 2 };

struct BagOptions {
  BagMode mode = BagMode::kMean;
  bool include_last_offset = false;
  int64_t padding_idx = -1;  // < 0: none
};

// weight [V, D], indices [N], offsets [O] (int64), per_sample_weights [N]
// (data null: none; sum only) in; output [B, D], offset2bag [N], bag_size
// [O] and max_indices ([B, D] in max mode, else empty) out, overwritten.
// B = O - include_last_offset.
absl::Status EmbeddingBag(const StridedView& weight, const StridedView& indices,
                          const StridedView& offsets,
                          const StridedView& per_sample_weights,
                          const BagOptions& options, const StridedView& output,
                          const StridedView& offset2bag,
                          const StridedView& bag_size,
                          const StridedView& max_indices);

// The weight's gradient [V, D] (overwritten) from grad [B, D] and the
// forward's indices, offset2bag, bag_size and max_indices (and
// per_sample_weights, data null: none). scale_grad_by_freq divides each
// row's gradient by how often its index occurs (sum and mean).
absl::Status EmbeddingBagDenseBackward(
    const StridedView& grad, const StridedView& indices,
    const StridedView& offset2bag, const StridedView& bag_size,
    const StridedView& max_indices, const StridedView& per_sample_weights,
    const BagOptions& options, bool scale_grad_by_freq,
    const StridedView& grad_weight);

// The per-sample weights' gradient [N] (overwritten; sum mode):
// dot(grad[offset2bag[i]], weight[indices[i]]), 0 at padding.
absl::Status EmbeddingBagPerSampleWeightsBackward(
    const StridedView& grad, const StridedView& weight,
    const StridedView& indices, const StridedView& offset2bag,
    int64_t padding_idx, const StridedView& grad_weights);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_EMBEDDING_BAG_H_
