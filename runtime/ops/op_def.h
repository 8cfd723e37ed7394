// One row of the op table (STYLE.md habit 1): everything tensord knows about
// an op. Wire dispatch, the catalog sent to clients and the consistency test
// all read these rows; adding an op is adding a row.
//
// Note [Infer before compute]: `infer` validates the call (arity is checked
// by the dispatcher; dtypes, shapes, dims, attribute values here) and returns
// the output specs without touching memory. Only when it succeeds are outputs
// allocated and the device kernel launched, so a bad call never reaches a
// kernel. View ops instead return aliases of their input from `view`, which
// must validate the same way before building the view.
#ifndef TENSORD_RUNTIME_OPS_OP_DEF_H_
#define TENSORD_RUNTIME_OPS_OP_DEF_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/generator.h"
#include "runtime/ops/attrs.h"
#include "runtime/tensor.h"

namespace tensord {

class OpDef;
struct OpContext;
class GradCtx;  // runtime/ops/grad_ctx.h
class GradValue;

// Note [Autograd recording]: when OpContext::recorder is set (grad mode on,
// or a backward pass with create_graph), CallOp runs rows through it instead
// of RunOp, so composite ops and backward formulas record graph nodes. The
// implementation lives in runtime/autograd (above this layer).
class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual absl::StatusOr<std::vector<Tensor>> Run(
      const OpDef& op, absl::Span<const Tensor> inputs, const Attrs& attrs,
      const OpContext& ctx) = 0;
};

// Note [Op phases]: while a session profiles, its commands carry an OpPhases
// and RunOp adds the time of each phase to it: shape inference, output
// allocation, the kernel (on CUDA: the launch). Only the outermost RunOp of a
// command times (depth 0): a kernel that runs other ops counts as kernel
// time, and a composite's inner ops add up their own phases; what a view or
// composite row does itself (building the view, a fused loop) is kernel time.
// A backward pass also lists the graph nodes it ran, in order.
struct PhaseSpan {
  std::string name;       // the node, e.g. "MmBackward0"
  uint64_t start_ns = 0;  // PhaseClockNs()
  uint64_t wall_ns = 0;
};
struct OpPhases {
  uint64_t infer_ns = 0;
  uint64_t alloc_ns = 0;
  uint64_t kernel_ns = 0;
  uint64_t first_run_ns = 0;  // PhaseClockNs() at the first RunOp; 0 before
  int depth = 0;
  std::vector<PhaseSpan> spans;
};
// A monotonic clock in nanoseconds (steady_clock) for OpPhases.
uint64_t PhaseClockNs();

// What an op sees of the session running it.
struct OpContext {
  Device* device = nullptr;  // the session's default device (creation ops)
  class DeviceRegistry* devices = nullptr;
  Generator* generator = nullptr;
  AllocContext alloc;  // session id and stream
  // The session's stream selector (Note [Session streams] in device.h):
  // ContextFor resolves it to alloc.stream on each device.
  uint32_t stream_id = 0;
  // TF32 for float32 GEMMs and convolutions on CUDA (SetOptions.allow_tf32).
  bool allow_tf32 = false;
  Recorder* recorder = nullptr;  // Note [Autograd recording]
  OpPhases* phases = nullptr;    // Note [Op phases]; null unless profiling
};

struct TensorSpec {
  DType dtype;
  Shape shape;
  Device* device;
};

using InferFn = absl::StatusOr<std::vector<TensorSpec>> (*)(
    absl::Span<const Tensor> inputs, const Attrs& attrs, const OpContext& ctx);
using KernelFn = absl::Status (*)(absl::Span<const Tensor> inputs,
                                  absl::Span<const Tensor> outputs,
                                  const Attrs& attrs, const OpContext& ctx);
using ViewFn = absl::StatusOr<std::vector<Tensor>> (*)(
    absl::Span<const Tensor> inputs, const Attrs& attrs, const OpContext& ctx);

// A small call of an op for the table-walking test (op_table_test.cc):
// input shapes and dtypes (random values; integer inputs are zeros, which
// are valid indices and targets) and attributes.
struct OpExample {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;  // empty or shorter: float32 for the rest
  std::map<std::string, AttrValue> attrs;
  // Float inputs drawn as |normal| (weights that must not be negative).
  bool positive = false;
};

// A backward formula (STYLE.md: one line per input, in terms of other ops):
// the gradient of each input from the gradients of the outputs, one value
// per input (an empty GradValue: no gradient). The engine reduces
// broadcast gradients to the input's shape and casts them to its dtype.
using BackwardFn = std::vector<GradValue> (*)(GradCtx& g);

class OpDef {
 public:
  std::string name;
  int min_inputs = 0;
  int max_inputs = 0;  // -1: variadic
  int num_outputs = 1;
  std::vector<AttrSpec> attrs;
  // The attributes of a call that gives none (every default), built once by
  // OpTable() so such calls skip Attrs::Build; nullptr when one is required.
  std::shared_ptr<const Attrs> default_attrs;
  InferFn infer = nullptr;  // compute ops
  KernelFn cpu = nullptr;   // compute ops: the CPU kernel wrapper
  KernelFn cuda = nullptr;  // compute ops: the CUDA one (nullptr: none yet)
  ViewFn view = nullptr;    // view ops (no infer/kernels)
  // Ops written in terms of other ops (in-place ops, losses, norms): they
  // validate up front, then call rows through RunOp. Exactly one of
  // infer/view/composite is set.
  ViewFn composite = nullptr;
  // Kernels that read half types themselves (copies); for the others the
  // dispatcher computes in float32 (Note [Half compute] in dispatch.cc).
  bool native_half = false;
  // The same for the CUDA kernel alone (the matmul rows: cuBLAS half GEMMs,
  // Note [Half GEMM] in kernels/cuda/blas.cc); the CPU still computes in
  // float32.
  bool native_half_cuda = false;
  // Example calls for the consistency test; a row with required attributes
  // or non-float inputs must have one.
  std::vector<OpExample> examples;
  bool differentiable = false;
  // Autograd (runtime/ops/derivatives_*.cc fill these in): the formula and
  // the inputs/outputs it reads, saved with their version at record time.
  // Differentiable composite rows without a formula are differentiated
  // through the ops they call (their inner calls are recorded).
  BackwardFn backward = nullptr;
  std::vector<int> save_inputs;
  std::vector<int> save_outputs;
  // Saved outputs a formula can do without (GradRow::optional_outputs).
  bool optional_outputs = false;
  // In-place rows: output 0 is input 0 (the graph rebases its history).
  bool inplace = false;
  std::string doc;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_OP_DEF_H_
