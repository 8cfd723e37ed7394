// What a backward formula sees (BackwardFn in op_def.h): the gradients of
// the op's outputs, its saved inputs/outputs, its attributes and the shapes
// of its inputs, and a small expression vocabulary over other ops.
//
// GradValue is a StatusOr<Tensor> with operators, so a formula reads like
// derivatives.yaml: `{g.grad() * g.in(1), g.grad() * g.in(0)}`. The first
// error in an expression is carried to its result. Every call goes through
// CallOp with the context's recorder, so when backward runs with
// create_graph the formula itself is recorded (second order).
#ifndef TENSORD_RUNTIME_OPS_GRAD_CTX_H_
#define TENSORD_RUNTIME_OPS_GRAD_CTX_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/ops/op_def.h"

namespace tensord {

class GradValue {
 public:
  GradValue() : value_(Tensor()) {}  // no gradient
  GradValue(absl::StatusOr<Tensor> value, GradCtx* g)
      : value_(std::move(value)), g_(g) {}
  bool empty() const { return value_.ok() && !value_->defined(); }
  const absl::StatusOr<Tensor>& value() const { return value_; }
  GradCtx* ctx() const { return g_; }

 private:
  absl::StatusOr<Tensor> value_;
  GradCtx* g_ = nullptr;
};
using Grads = std::vector<GradValue>;

class GradCtx {
 public:
  GradCtx(const OpContext& ctx, const Attrs& attrs, std::vector<Tensor> grads,
          std::vector<Tensor> inputs, std::vector<Tensor> outputs,
          std::vector<TensorSpec> input_specs, std::vector<bool> needs);

  GradValue grad(int i = 0);  // gradient of output i (zeros if none flowed)
  GradValue in(int i);        // saved input i
  GradValue out(int i = 0);   // saved output i
  // Whether saved output i is there (an optional one modified in place is
  // not: GradRow::optional_outputs).
  bool has_out(int i = 0) const {
    return i >= 0 && i < static_cast<int>(outputs_.size()) &&
           outputs_[i].defined();
  }
  const Shape& in_shape(int i) const { return specs_[i].shape; }
  DType in_dtype(int i) const { return specs_[i].dtype; }
  int num_inputs() const { return static_cast<int>(specs_.size()); }
  // Whether input i needs a gradient (formulas may skip the others).
  bool needs(int i) const { return needs_[i]; }
  const Attrs& attrs() const { return attrs_; }
  const OpContext& op_ctx() const { return ctx_; }

  // Op `name` on `inputs` (first output / all outputs).
  GradValue Op(const std::string& name, std::vector<GradValue> inputs,
               std::map<std::string, AttrValue> attrs = {});
  std::vector<GradValue> Ops(const std::string& name,
                             std::vector<GradValue> inputs,
                             std::map<std::string, AttrValue> attrs = {});
  // A 0-d tensor `v` of like's dtype and device.
  GradValue Num(double v, const GradValue& like);
  // Zeros of input i's shape, dtype and device.
  GradValue ZerosOfInput(int i);
  // Sums `t` down to `shape` (reducing broadcast dims).
  GradValue SumTo(const GradValue& t, const Shape& shape);

 private:
  const OpContext& ctx_;
  const Attrs& attrs_;
  std::vector<Tensor> grads_, inputs_, outputs_;
  std::vector<TensorSpec> specs_;
  std::vector<bool> needs_;
};

GradValue operator+(const GradValue& a, const GradValue& b);
GradValue operator-(const GradValue& a, const GradValue& b);
GradValue operator*(const GradValue& a, const GradValue& b);
GradValue operator/(const GradValue& a, const GradValue& b);
GradValue operator-(const GradValue& a);
GradValue operator+(const GradValue& a, double b);
GradValue operator*(const GradValue& a, double b);
GradValue operator*(double a, const GradValue& b);
GradValue operator/(const GradValue& a, double b);

// Attribute shorthands for formulas.
using Ints = std::vector<int64_t>;
inline AttrValue IntsAttr(Ints v) { return AttrValue(std::move(v)); }

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_GRAD_CTX_H_
