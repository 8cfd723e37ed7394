// embedding's weight gradient (ATen's embedding_dense_backward) on
// contiguous CPU tensors.
//
// Note [Embedding gradient rows]: out[k, :] = sum of grad[i, :] over the i
// with index[i] == k, written in one pass: the table is cut into blocks of
// ~32 KB of rows and the indices bucketed by block (a stable counting sort of
// n positions, a small pass next to the n * D grad values); the pool's
// threads take whole blocks, zero one and add its grad rows while it is in
// cache. No two threads write the same row (PyTorch's CPU kernel splits rows
// the same way), and within a row the sum runs in index order whatever the
// thread count: deterministic.
#ifndef TENSORD_KERNELS_CPU_EMBEDDING_H_
#define TENSORD_KERNELS_CPU_EMBEDDING_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// out [V, D] (written whole) from grad [n, D] and index's n entries
// (int64 or int32), all contiguous, float32/float64. Rows at padding_idx
// (when in [0, V)) stay zero; with scale_grad_by_freq each row k is divided
// by the number of times k occurs in index. An entry out of [0, V) is
// INVALID_ARGUMENT naming embedding_backward, checked before any write.
absl::Status EmbeddingDenseBackward(const StridedView& grad,
                                    const StridedView& index,
                                    int64_t padding_idx,
                                    bool scale_grad_by_freq,
                                    const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_EMBEDDING_H_
