// What the fused optimizer step rows (sgd_step_ops.cc, adam_step_ops.cc)
// share: the check of their input lists, the choice between the fused paths
// and the composed one, the composed path's vocabulary over CallOp, the CUDA
// launch on the session's stream, and the gradients read from .grad. Private
// to the op table library.
#ifndef TENSORD_RUNTIME_OPS_OPTIM_STEP_H_
#define TENSORD_RUNTIME_OPS_OPTIM_STEP_H_

#include <map>
#include <string>
#include <vector>

#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_def.h"
#include "runtime/ops/op_helpers.h"

namespace tensord {
namespace optim_step {

// Checks the input list: `groups` lists of n tensors, each like params[i].
absl::Status CheckGroups(const char* op, absl::Span<const Tensor> in, int64_t n,
                         int groups);

// The fused paths take contiguous float32/float64 tensors: loops split over
// the pool on the CPU, one kernel per parameter on CUDA (kernels/cuda/
// optim.h, in CUDA builds); the others run the same algorithm as ops (any
// dtype, layout or device).
bool Fast(absl::Span<const Tensor> in, int64_t n, int64_t i, int groups);

// A small vocabulary over CallOp for the composed path.
struct Composed {
  const OpContext& ctx;
  absl::StatusOr<Tensor> Num(double v, const Tensor& like) const {
    return Scalar(v, DType::kFloat64, like.device(), ctx);
  }
  absl::StatusOr<Tensor> operator()(const char* op, std::vector<Tensor> in,
                                    std::map<std::string, AttrValue> a = {}) {
    return Call1(op, std::move(in), std::move(a), ctx);
  }
  // t (op)= v * alpha, in place.
  absl::Status InPlace(const char* op, const Tensor& t, const Tensor& v,
                       double alpha = 1) {
    std::map<std::string, AttrValue> a;
    if (alpha != 1) a["alpha"] = alpha;
    return Call1(op, {t, v}, std::move(a), ctx).status();
  }
};

bool OnCpu(const Tensor& t);

// Note [Optimizer steps split by elements]: a model's parameters are few and
// uneven (a 1024x1024 weight beside a 10-element bias), so a split of the
// parameter list over the CPU pool ran most of a step on one core (the MLP's
// SGD step: 3.2 ms of a 21 ms training step). The fused CPU loops instead run
// over fixed-size chunks of every parameter's elements, all parameters' chunks
// split over the pool together. Calls fn(i, begin, end) for the elements
// [begin, end) of each CPU parameter i among params[0, n) that Fast selects.
void ForEachCpuChunk(absl::Span<const Tensor> in, int64_t n, int groups,
                     absl::FunctionRef<void(int64_t, int64_t, int64_t)> fn);

// The CUDA fused step of parameter i: on the session's stream of its
// device, its tensors' blocks recorded there (Note [Cross-stream inputs]).
template <typename Launch>
absl::Status OnDeviceStream(absl::Span<const Tensor> in, int64_t n, int64_t i,
                            int groups, const OpContext& ctx, Launch launch) {
  TD_ASSIGN_OR_RETURN(OpContext dctx, ContextFor(in[i].device(), ctx));
  std::vector<Tensor> used;
  for (int g = 0; g < groups; ++g) used.push_back(in[g * n + i]);
  TD_RETURN_IF_ERROR(RecordCrossStreamUses(used, dctx.alloc.stream));
  return launch(dctx.alloc.stream);
}

// Note [Optimizer steps read .grad]: a client that had to learn which
// parameters have a gradient before sending a step waited a round trip per
// training step (the GetGrad Acks). So the steps take no gradients: each
// parameter's gradient is its .grad here, read when the step runs (in stream
// order, after the backward that wrote it), and parameters without one are
// left out, as torch.optim skips them; their state is not touched. Inputs
// are `given` lists of n (params first, then state); returns them with the
// gradients inserted as list 1, for the parameters that have one.
absl::StatusOr<std::vector<Tensor>> WithGrads(const char* op,
                                              absl::Span<const Tensor> in,
                                              int64_t n, int given);

}  // namespace optim_step

// The step rows, in the order OptimOps lists them.
OpDef SgdStepOp();   // sgd_step_ops.cc
OpDef AdamStepOp();  // adam_step_ops.cc

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_OPTIM_STEP_H_
