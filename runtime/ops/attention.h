// scaled_dot_product_attention's shared pieces: the call's validation and
// sizes (attention_ops.cc), the composite row and the composed attention
// weights (attention_compose.cc), which the gradient of the fused row reuses
// when a backward pass is itself recorded (AttentionGrads,
// attention_compose.cc).
#ifndef TENSORD_RUNTIME_OPS_ATTENTION_H_
#define TENSORD_RUNTIME_OPS_ATTENTION_H_

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/ops/op_def.h"

namespace tensord {

// The sizes of one call: query [..., L, E], key [..., S, E], value
// [..., S, Ev]; `batch` their leading dims broadcast together.
struct AttentionDims {
  Shape batch;
  int64_t l = 0, s = 0, e = 0, ev = 0;
};

// Validates query, key, value and the optional mask (bool or the query's
// dtype, broadcastable to batch + [L, S]; not with `causal`), naming `op`.
absl::StatusOr<AttentionDims> CheckAttention(const Tensor& q, const Tensor& k,
                                             const Tensor& v,
                                             const Tensor* mask, bool causal,
                                             const char* op);

// The "scale" attribute, or 1/sqrt(E) when it is None.
double AttentionScale(const Attrs& attrs, int64_t e);

// The logsumexp's dtype: float32 for half inputs (PyTorch's), else theirs.
DType AttentionLseType(DType dtype);

// `batch` followed by `tail`.
Shape WithTail(Shape batch, std::initializer_list<int64_t> tail);

// softmax(q k^T * scale, masked) over the last dim, composed of rows (so
// recorded when ctx.recorder is set): a bool mask (True: may attend) and
// the causal mask fill -inf, a float mask is added.
absl::StatusOr<Tensor> AttentionWeights(const Tensor& q, const Tensor& k,
                                        const Tensor* mask, bool causal,
                                        double scale, const OpContext& ctx);

// The composite row scaled_dot_product_attention.
absl::StatusOr<std::vector<Tensor>> ScaledDotProductAttention(
    absl::Span<const Tensor> in, const Attrs& attrs, const OpContext& ctx);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_ATTENTION_H_
