// The op table: every op tensord serves, in catalog order (the index is the
// op id on the wire). Built once from the per-family row lists below, which
// are plain functions returning vectors: greppable, no static registration.
#ifndef TENSORD_RUNTIME_OPS_OP_TABLE_H_
#define TENSORD_RUNTIME_OPS_OP_TABLE_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "runtime/ops/op_def.h"

namespace tensord {

// The whole table; built on first use, immutable afterwards (thread-safe).
const std::vector<OpDef>& OpTable();
// nullptr when there is no op of that name.
const OpDef* FindOp(absl::string_view name);

// The families (each in its own *_ops.cc).
std::vector<OpDef> CreationOps();
std::vector<OpDef> UnaryOps();
std::vector<OpDef> PointwiseOps();
std::vector<OpDef> CompareOps();
std::vector<OpDef> InPlaceOps();
std::vector<OpDef> ReductionOps();
std::vector<OpDef> LinalgOps();
std::vector<OpDef> LapackOps();  // lapack_ops.cc: LU, solves, inv, det, ...
std::vector<OpDef> LapackSpectralOps();  // cholesky, eigh, svd
std::vector<OpDef> LapackQrOps();  // lapack_qr_ops.cc: QR family, lstsq
std::vector<OpDef> LapackMatrixOps();  // matrix_exp, LDL
std::vector<OpDef> ViewOps();
std::vector<OpDef> ShapeOps();
std::vector<OpDef> IndexOps();
std::vector<OpDef> ScatterReduceOps();
std::vector<OpDef> DistanceOps();  // cdist, pdist, histc
std::vector<OpDef> NnOps();  // nn_ops.cc: (log_)softmax(_backward), ...
std::vector<OpDef> ConvOps();
std::vector<OpDef> ConvGradOps();   // conv_grad_ops.cc: internal to autograd
std::vector<OpDef> Conv3dOps();     // conv3d_ops.cc: conv3d and its gradients
std::vector<OpDef> GridSampleOps();  // grid_sample_ops.cc: grid_sampler_2d's backward
// embedding_bag_ops.cc: _embedding_bag and its two backward rows
std::vector<OpDef> EmbeddingBagOps();
std::vector<OpDef> EmbeddingOps();  // embedding_ops.cc
// margin_loss_ops.cc: multi_margin_loss_backward, multilabel_margin_loss_backward
std::vector<OpDef> MarginLossOps();
// grid_sample_3d_ops.cc: grid_sampler_3d and its backward
std::vector<OpDef> GridSample3dOps();
// ctc_loss_ops.cc: _ctc_loss and its backward
std::vector<OpDef> CtcLossOps();
// segment_reduce_ops.cc: segment_reduce and its backward
std::vector<OpDef> SegmentReduceOps();
// trilinear_ops.cc: _trilinear (F.bilinear's op), composed
std::vector<OpDef> TrilinearOps();
// upsample_aa_ops.cc: _upsample_bilinear2d_aa and its backward
std::vector<OpDef> UpsampleAaOps();
// histogramdd_ops.cc: _histogramdd_bin_edges, _histogramdd_from_bin_cts/tensors
std::vector<OpDef> HistogramddOps();
std::vector<OpDef> MaxPoolOps();    // max_pool_ops.cc: max_pool2d_with_indices
// adaptive_max_pool_ops.cc: adaptive_max_pool{2,3}d, their backward,
// max_pool3d_with_indices_backward
std::vector<OpDef> AdaptiveMaxPoolOps();
// avg_pool3d_ops.cc: avg_pool3d, adaptive_avg_pool3d and their backward
std::vector<OpDef> AvgPool3dOps();
std::vector<OpDef> BatchNormOps();  // batch_norm_ops.cc: fused, CPU
std::vector<OpDef> OptimOps();      // optim_ops.cc: detach, sgd/adam steps, ...
std::vector<OpDef> SortOps();  // sort_ops.cc: sort, topk, cumsum, flip, ...
// scan_ops.cc: cummax/cummin, logcumsumexp, mode, searchsorted
std::vector<OpDef> ScanOps();
std::vector<OpDef> SelectOps();  // select_ops.cc: tril, triu, leaky_relu, ...
std::vector<OpDef> LossOps();    // loss_ops.cc: binary_cross_entropy, ...
std::vector<OpDef> LayerNormOps();     // layer_norm_ops.cc: fused, CPU
std::vector<OpDef> GroupNormOps();     // group_norm_ops.cc: fused, CPU
std::vector<OpDef> CrossEntropyOps();  // cross_entropy_ops.cc: fused, CPU
std::vector<OpDef> GeluOps();          // gelu_ops.cc: gelu, gelu_backward
std::vector<OpDef> StridedOps();       // strided_ops.cc: as_strided
std::vector<OpDef> SpecialOps();       // special_ops.cc: torch.special's maps
// attention_ops.cc: scaled_dot_product_attention, its fused CPU rows
std::vector<OpDef> AttentionOps();
// nll_loss and cross_entropy (nll_loss_ops.cc), in NnOps after mse_loss.
std::vector<OpDef> NllLossOps(const AttrSpec& reduction);
// narrow, select and slice (slice_view_ops.cc), last in ViewOps.
std::vector<OpDef> SliceViewOps();

// A row of the unary/pointwise families by name while the table is being
// built (in-place rows copy their twin's schema); nullptr if none.
const OpDef* FindOpInFamilies(const std::string& name);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_OP_TABLE_H_
