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

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_COMPOSE_H_
