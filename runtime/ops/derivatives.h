// The backward formulas of the op table, by op name (as PyTorch's
// derivatives.yaml): each entry names a row, the inputs and outputs its
// formula reads (saved at record time), and the formula. AttachGradients
// puts them into the rows when the table is built; a name without a row is
// a tensord bug (checked at startup).
#ifndef TENSORD_RUNTIME_OPS_DERIVATIVES_H_
#define TENSORD_RUNTIME_OPS_DERIVATIVES_H_

#include <vector>

#include "runtime/ops/grad_ctx.h"
#include "runtime/ops/op_def.h"

namespace tensord {

struct GradRow {
  const char* op;
  std::vector<int> save_inputs;
  std::vector<int> save_outputs;
  BackwardFn backward;
  // The saved outputs only spare the formula work: one modified in place
  // before backward reaches it as absent (GradCtx::has_out) instead of
  // failing the backward (Note [Versions]).
  bool optional_outputs = false;
};

std::vector<GradRow> PointwiseGrads();      // derivatives_pointwise.cc
std::vector<GradRow> ReductionGrads();      // derivatives_reduction.cc
std::vector<GradRow> ShapeGrads();          // derivatives_shape.cc
std::vector<GradRow> NnGrads();             // derivatives_nn.cc
std::vector<GradRow> PoolGrads();           // derivatives_pool.cc
std::vector<GradRow> MathGrads();           // derivatives_math.cc
std::vector<GradRow> DistanceGrads();       // distance_ops.cc
std::vector<GradRow> AttentionGrads();      // attention_compose.cc
std::vector<GradRow> EmbeddingBagGrads();   // embedding_bag_ops.cc
std::vector<GradRow> EmbeddingGrads();      // embedding_ops.cc
std::vector<GradRow> GridSample3dGrads();   // grid_sample_3d_ops.cc
std::vector<GradRow> CtcLossGrads();        // ctc_loss_ops.cc
std::vector<GradRow> SegmentReduceGrads();  // segment_reduce_ops.cc
std::vector<GradRow> MarginLossGrads();     // margin_loss_ops.cc
std::vector<GradRow> UpsampleAaGrads();     // upsample_aa_ops.cc
std::vector<GradRow> GroupNormGrads();      // group_norm_ops.cc
std::vector<GradRow> LinalgGrads();  // derivatives_linalg.cc: LAPACK rows

void AttachGradients(std::vector<OpDef>* table);

// Shared helpers.
// `v` (the gradient of a reduction's output) reshaped to keepdim form and
// expanded to input 0's shape. `int_dim`: the row's "dim" is one int.
GradValue Unreduce(GradCtx& g, const GradValue& v, bool int_dim = false);
// Same for a saved output (e.g. amax's values).
inline GradValue Zero(GradCtx& g, const GradValue& like) {
  return g.Num(0, like);
}
GradValue Where(GradCtx& g, const GradValue& cond, const GradValue& a,
                const GradValue& b);
GradValue Cmp(GradCtx& g, const char* op, const GradValue& a,
              const GradValue& b);
GradValue Cast(GradCtx& g, const GradValue& v, DType dtype);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_DERIVATIVES_H_
