// The `reduction` attribute of the losses written as composites in
// nn_ops.cc (mse_loss) and nll_loss_ops.cc (nll_loss, cross_entropy): its
// check and its application. Private to the op table library.
#ifndef TENSORD_RUNTIME_OPS_LOSS_REDUCTION_H_
#define TENSORD_RUNTIME_OPS_LOSS_REDUCTION_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/ops/compose.h"

namespace tensord {

inline absl::Status CheckReduction(const std::string& r) {
  if (r == "mean" || r == "sum" || r == "none") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      r, " is not a valid value for reduction (mean, sum or none)"));
}

inline absl::StatusOr<Tensor> Reduce(const ComposeOps& op, const Tensor& loss,
                                     const std::string& r) {
  if (r == "none") return loss;
  return op(r == "sum" ? "sum" : "mean", {loss});
}

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_LOSS_REDUCTION_H_
