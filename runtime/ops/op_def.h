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

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/generator.h"
#include "runtime/ops/attrs.h"
#include "runtime/tensor.h"

namespace tensord {

// What an op sees of the session running it.
struct OpContext {
  Device* device = nullptr;  // the session's default device (creation ops)
  class DeviceRegistry* devices = nullptr;
  Generator* generator = nullptr;
  AllocContext alloc;  // session id and stream
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

struct OpDef {
  std::string name;
  int min_inputs = 0;
  int max_inputs = 0;   // -1: variadic
  int num_outputs = 1;
  std::vector<AttrSpec> attrs;
  InferFn infer = nullptr;   // compute ops
  KernelFn cpu = nullptr;    // compute ops: the CPU kernel wrapper
  KernelFn cuda = nullptr;   // compute ops: the CUDA one (nullptr: none yet)
  ViewFn view = nullptr;     // view ops (no infer/kernels)
  bool differentiable = false;
  std::string doc;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_OP_DEF_H_
