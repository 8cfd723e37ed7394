// Calling rows by name from composite ops (ops written in terms of others).
#ifndef TENSORD_RUNTIME_OPS_COMPOSE_H_
#define TENSORD_RUNTIME_OPS_COMPOSE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/ops/op_def.h"

namespace tensord {

// Runs the row named `name` (which must exist: a tensord bug otherwise);
// attributes are checked against its schema as for a wire call.
absl::StatusOr<std::vector<Tensor>> CallOp(
    const std::string& name, std::vector<Tensor> inputs,
    std::map<std::string, AttrValue> attrs, const OpContext& ctx);

// The first output of CallOp.
absl::StatusOr<Tensor> Call1(const std::string& name,
                             std::vector<Tensor> inputs,
                             std::map<std::string, AttrValue> attrs,
                             const OpContext& ctx);

// A 0-d tensor holding `value` as `dtype` on `device`.
absl::StatusOr<Tensor> Scalar(double value, DType dtype, Device* device,
                              const OpContext& ctx);

// A small composition vocabulary over Call1: op("mul", {a, b}) runs a row,
// op.Num(v, like) makes a 0-d tensor of like's dtype and device.
struct ComposeOps {
  const OpContext& ctx;
  absl::StatusOr<Tensor> operator()(
      const std::string& name, std::vector<Tensor> in,
      std::map<std::string, AttrValue> attrs = {}) const {
    return Call1(name, std::move(in), std::move(attrs), ctx);
  }
  absl::StatusOr<Tensor> Num(double v, const Tensor& like) const {
    return Scalar(v, like.dtype(), like.device(), ctx);
  }
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_COMPOSE_H_
