// The list of known_cpu_only.h. Keep each group's comment naming the file
// whose rows it holds and why they have no CUDA kernel.
#include "runtime/ops/known_cpu_only.h"

namespace tensord {

const std::set<std::string>& KnownCpuOnly() {
  static const auto* rows = new std::set<std::string>{
      // LAPACK rows (lapack_*ops.cc): CPU only for now (no cuSOLVER path).
      "_linalg_det", "_linalg_eigh", "_linalg_slogdet", "_linalg_solve_ex",
      "_linalg_svd", "linalg_cholesky_ex", "linalg_inv_ex",
      "linalg_lu_factor_ex", "linalg_lu_solve", "linalg_solve_triangular",
      "geqrf", "linalg_qr", "ormqr", "linalg_householder_product",
      "linalg_lstsq", "linalg_matrix_exp", "linalg_ldl_factor_ex",
      "linalg_ldl_solve", "triangular_solve",
      // unary_ops.cc: frexp's two outputs have no CUDA map kernel yet.
      "frexp",
      // conv3d_ops.cc: kernels/cuda/conv.cc's cuDNN path is 2-d only (4-d
      // descriptors, a 2-d ConvShape and algorithm cache key).
      "conv3d", "conv3d_backward_input", "conv3d_backward_weight",
      // grid_sample_ops.cc: the forward is PyTorch's decomposition, with no
      // CUDA kernel of its own to add the backward beside.
      "grid_sampler_2d_backward", "grid_sampler_3d", "grid_sampler_3d_backward",
      // embedding_bag_ops.cc: no sibling CUDA kernel yet.
      "_embedding_bag", "_embedding_bag_dense_backward",
      "_embedding_bag_per_sample_weights_backward",
      // embedding_ops.cc: embedding's formula composes scatter_add off the
      // CPU.
      "embedding_dense_backward",
      // margin_loss_ops.cc: no sibling CUDA kernel yet.
      "multi_margin_loss", "multilabel_margin_loss_forward",
      "multi_margin_loss_backward", "multilabel_margin_loss_backward",
      // ctc_loss_ops.cc: no sibling CUDA kernel yet.
      "_ctc_loss", "_ctc_loss_backward",
      // segment_reduce_ops.cc: no sibling CUDA kernel yet.
      "segment_reduce", "_segment_reduce_backward",
      // upsample_aa_ops.cc, histogramdd_ops.cc: no sibling CUDA kernel yet
      // (_trilinear composes rows that have them).
      "_upsample_bilinear2d_aa", "_upsample_bilinear2d_aa_backward",
      "_histogramdd_bin_edges", "_histogramdd_from_bin_cts",
      "_histogramdd_from_bin_tensors",
      // group_norm_ops.cc: no sibling CUDA kernel yet (the clients compose
      // group_norm off the CPU).
      "native_group_norm", "native_group_norm_backward",
      // nn_ops.cc: CUDA composes softmax's and log_softmax's gradients.
      "softmax_backward", "log_softmax_backward",
      // Fused attention (attention_ops.cc): CUDA composes
      // scaled_dot_product_attention instead.
      "scaled_dot_product_flash_attention",
      "scaled_dot_product_flash_attention_backward"};
  return *rows;
}

}  // namespace tensord
