// scaled_dot_product_attention's fused forward and backward (flash-attention
// style) on float32/float64 data: softmax(Q K^T * scale + mask) V for each of
// `batch` independent (batch, head) problems, computed in blocks of queries
// against blocks of keys with an online softmax, so no [L, S] matrix is ever
// materialised (only a [kQueryBlock, kKeyBlock] block per task). The forward
// saves each query's log-sum-exp; the backward recomputes the weights of
// each block from it (as PyTorch's CPU flash kernel).
//
// Note [Attention geometry]: each problem's Q [L, E], K [S, E], V [S, Ev]
// are row-major blocks (column stride 1, row stride q_row, k_row, v_row: E or
// Ev when packed) at per-problem element offsets, so batch dims that
// broadcast (stride 0) cost no copy, and neither do heads that are views
// into a wider row (GPT's q, k, v: sections of one [B, T, 3C] projection,
// reshaped to heads and transposed, rows 3C apart). The mask, if any, is
// read at mask_off[b] + i * mask_row + j * mask_col (strides may be 0): bool
// (True: may attend) or of the data's type (added). Causal masking is
// top-left aligned (key j <= query i), as PyTorch's is_causal. A query that
// may attend to no key gets a zero output and a zero gradient (PyTorch's
// flash kernel; its math path gives NaN).
// The outputs (out, lse, dq, dk, dv) are contiguous [batch, ...]; the
// backward's grad_out is contiguous too, or at dout_off[b] with rows dout_row
// apart as Q is.
//
// Threads: the forward splits (problem, query block) pairs over the intra-op
// pool, the backward the problems (each owns its dk and dv). Inside those
// bodies the GEMMs run on the calling thread (Note [GEMM threads]); with a
// single task the body runs inline and the GEMMs split themselves.
#ifndef TENSORD_KERNELS_CPU_ATTENTION_H_
#define TENSORD_KERNELS_CPU_ATTENTION_H_

#include <cstdint>

namespace tensord {
namespace cpu {

struct AttentionGeometry {
  int64_t batch = 0;  // independent problems
  int64_t l = 0, s = 0, e = 0, ev = 0;
  double scale = 1;
  bool causal = false;
  // Element offsets of problem b's Q, K, V (arrays of `batch`).
  const int64_t* q_off = nullptr;
  const int64_t* k_off = nullptr;
  const int64_t* v_off = nullptr;
  // Row strides of Q, K, V (>= their row length); 0: packed rows.
  int64_t q_row = 0, k_row = 0, v_row = 0;
  // The backward's grad_out: problem b's [L, Ev] at dout_off[b], rows
  // dout_row apart (0: packed); nullptr: contiguous [batch, L, Ev].
  const int64_t* dout_off = nullptr;
  int64_t dout_row = 0;
  // The mask: nullptr for none.
  const void* mask = nullptr;
  bool mask_is_bool = false;
  const int64_t* mask_off = nullptr;
  int64_t mask_row = 0, mask_col = 0;
};

// out [batch, L, Ev] and lse [batch, L] (a fully masked query: 0 and 0, as
// PyTorch's flash kernel; the backward reads its weights as 0 whatever lse).
template <typename T>
void AttentionForward(const AttentionGeometry& g, const T* q, const T* k,
                      const T* v, T* out, T* lse);

// From the output's gradient and the forward's out and lse: dq [batch, L, E],
// dk [batch, S, E], dv [batch, S, Ev] (each problem's own; the caller sums
// broadcast problems).
template <typename T>
void AttentionBackward(const AttentionGeometry& g, const T* grad_out,
                       const T* q, const T* k, const T* v, const T* out,
                       const T* lse, T* dq, T* dk, T* dv);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_ATTENTION_H_
