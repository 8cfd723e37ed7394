#include "runtime/ops/op_helpers.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace {

int Category(DType d) { return d == DType::kBool ? 0 : IsFloating(d) ? 2 : 1; }

}  // namespace

AttrSpec Required(std::string name, AttrType type) {
  return AttrSpec{std::move(name), type, true, {}};
}

AttrSpec Optional(std::string name, AttrType type, AttrValue default_value) {
  return AttrSpec{std::move(name), type, false, std::move(default_value)};
}

std::vector<AttrSpec> CreationAttrs(std::vector<AttrSpec> leading,
                                    DType default_dtype) {
  leading.push_back(Optional("dtype", AttrType::kDType, default_dtype));
  leading.push_back(Optional("device", AttrType::kString, std::string()));
  return leading;
}

absl::StatusOr<Device*> ResolveDevice(const Attrs& attrs,
                                      const OpContext& ctx) {
  const std::string& name = attrs.String("device");
  if (name.empty()) return ctx.device;
  Device* device = ctx.devices ? ctx.devices->Find(name) : nullptr;
  if (device == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown device '", name, "' (this daemon serves: ",
                     ctx.devices ? ctx.devices->Names() : "cpu", ")"));
  }
  return device;
}

DType ResultType(absl::Span<const Tensor> inputs) {
  // Three tiers, highest first (Note [Wrapped numbers] in runtime/tensor.h):
  // dimensioned tensors, 0-dim tensors, wrapped numbers. A lower tier decides
  // only when its category (bool < integral < floating) is higher.
  std::optional<DType> tier[3];
  for (const Tensor& t : inputs) {
    const int k = t.ndim() > 0 ? 0 : t.is_wrapped_number() ? 2 : 1;
    tier[k] = tier[k] ? PromoteTypes(*tier[k], t.dtype()) : t.dtype();
  }
  // A wrapped number's own width does not count: a Python float computes in
  // the default float type, an int in int64.
  if (tier[2] && IsFloating(*tier[2])) tier[2] = kDefaultFloat;
  std::optional<DType> result;
  for (const std::optional<DType>& type : tier) {
    if (type && (!result || Category(*type) > Category(*result))) {
      result = type;
    }
  }
  return result.value_or(DType::kBool);
}

absl::StatusOr<Shape> ShapeAttr(const Attrs& attrs, const std::string& name,
                                DType dtype) {
  const std::vector<int64_t>& v = attrs.Ints(name);
  Shape shape(v.begin(), v.end());
  TD_RETURN_IF_ERROR(CheckShape(shape, ItemSize(dtype)));
  return shape;
}

OpDef MakeOp(std::string name, int min_inputs, int max_inputs,
             std::vector<AttrSpec> attrs, std::string doc) {
  OpDef def;
  def.name = std::move(name);
  def.min_inputs = min_inputs;
  def.max_inputs = max_inputs;
  def.attrs = std::move(attrs);
  def.differentiable = true;
  def.doc = std::move(doc);
  return def;
}

OpExample Example(std::vector<Shape> shapes,
                  std::map<std::string, AttrValue> attrs,
                  std::vector<DType> dtypes) {
  return OpExample{std::move(shapes), std::move(dtypes), std::move(attrs)};
}

absl::Status RequireFloating(const Tensor& t, const std::string& what) {
  if (IsFloating(t.dtype())) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " needs a floating point tensor, got ",
                   DTypeName(t.dtype()), " (convert with .float() first)"));
}

absl::StatusOr<int> OneDim(const Tensor& t, const Attrs& attrs) {
  return WrapDim(attrs.Int("dim"), std::max(t.ndim(), 1));
}

absl::Status RequireDim(const Tensor& t, int ndim, const std::string& what) {
  if (t.ndim() == ndim) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " must be ", ndim, "-d, got shape ", ShapeToString(t.shape())));
}

absl::Status NotDifferentiable(const std::string& op, const std::string& arg,
                               int index) {
  return absl::InvalidArgumentError(absl::StrCat(
      op, " is not differentiable with respect to argument '", arg, "' (input ",
      index, "): the derivative for '", arg,
      "' is not implemented (as in PyTorch): it cannot require grad, pass ",
      arg, ".detach()"));
}

absl::Status RequireInput(const std::string& op, int index, const Tensor& t,
                          DType dtype, const Shape& shape) {
  if (t.dtype() == dtype && t.shape() == shape) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": input ", index, " should be ", DTypeName(dtype), " ",
                   ShapeToString(shape), ", got ", DTypeName(t.dtype()), " ",
                   ShapeToString(t.shape())));
}

absl::StatusOr<std::vector<bool>> ReducedDims(const Attrs& attrs, int rank) {
  std::vector<bool> reduced(rank, false);
  const std::vector<int64_t>& dims = attrs.Ints("dim");
  if (dims.empty()) {
    reduced.assign(rank, true);
    return reduced;
  }
  for (int64_t d : dims) {
    TD_ASSIGN_OR_RETURN(int wrapped, WrapDim(d, rank));
    if (rank == 0) continue;
    if (reduced[wrapped]) {
      return absl::InvalidArgumentError(
          absl::StrCat("dim ", wrapped, " appears multiple times in dim"));
    }
    reduced[wrapped] = true;
  }
  return reduced;
}

double IntegralScalar(DType dtype, double v) {
  return IsFloating(dtype) ? v : std::trunc(v);
}

}  // namespace tensord
