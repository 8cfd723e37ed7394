#include "runtime/ops/compose.h"

#include "kernels/cpu/elementwise.h"
#include "runtime/core/check.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"

namespace tensord {

absl::StatusOr<std::vector<Tensor>> CallOp(
    const std::string& name, std::vector<Tensor> inputs,
    std::map<std::string, AttrValue> attrs, const OpContext& ctx) {
  const OpDef* op = FindOp(name);
  TD_CHECK(op != nullptr, name.c_str());
  Attrs storage;
  TD_ASSIGN_OR_RETURN(const Attrs* built,
                      CallAttrs(*op, std::move(attrs), &storage));
  // Note [Autograd recording] (op_def.h): composites and formulas record.
  if (ctx.recorder != nullptr) {
    return ctx.recorder->Run(*op, inputs, *built, ctx);
  }
  return RunOp(*op, inputs, *built, ctx);
}

absl::StatusOr<Tensor> Call1(const std::string& name,
                             std::vector<Tensor> inputs,
                             std::map<std::string, AttrValue> attrs,
                             const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                      CallOp(name, std::move(inputs), std::move(attrs), ctx));
  return out[0];
}

absl::StatusOr<Tensor> Scalar(double value, DType dtype, Device* device,
                              const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(OpContext dctx, ContextFor(device, ctx));
  TD_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(device, dtype, {}, dctx.alloc));
  TD_RETURN_IF_ERROR(FillOnDevice(device, t.view(), value, dctx.alloc.stream));
  return t;
}

}  // namespace tensord
