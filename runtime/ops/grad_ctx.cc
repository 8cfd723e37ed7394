#include "runtime/ops/grad_ctx.h"

#include "absl/strings/str_cat.h"
#include "runtime/ops/compose.h"

namespace tensord {

GradCtx::GradCtx(const OpContext& ctx, const Attrs& attrs,
                 std::vector<Tensor> grads, std::vector<Tensor> inputs,
                 std::vector<Tensor> outputs,
                 std::vector<TensorSpec> input_specs, std::vector<bool> needs)
    : ctx_(ctx),
      attrs_(attrs),
      grads_(std::move(grads)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      specs_(std::move(input_specs)),
      needs_(std::move(needs)) {}

namespace {
GradValue Pick(GradCtx* g, const std::vector<Tensor>& v, int i,
               const char* what) {
  if (i < 0 || i >= static_cast<int>(v.size()) || !v[i].defined()) {
    return GradValue(absl::InternalError(
                         absl::StrCat("tensord bug: a backward formula read ",
                                      what, " ", i, ", which was not saved")),
                     g);
  }
  return GradValue(v[i], g);
}
}  // namespace

GradValue GradCtx::grad(int i) { return Pick(this, grads_, i, "grad"); }
GradValue GradCtx::in(int i) { return Pick(this, inputs_, i, "input"); }
GradValue GradCtx::out(int i) { return Pick(this, outputs_, i, "output"); }

std::vector<GradValue> GradCtx::Ops(const std::string& name,
                                    std::vector<GradValue> inputs,
                                    std::map<std::string, AttrValue> attrs) {
  std::vector<Tensor> in;
  for (const GradValue& v : inputs) {
    if (!v.value().ok()) return {v};
    if (!v.value()->defined()) {
      return {GradValue(
          absl::InternalError(absl::StrCat(
              "tensord bug: a backward formula passed no tensor to ", name)),
          this)};
    }
    in.push_back(*v.value());
  }
  auto out = CallOp(name, std::move(in), std::move(attrs), ctx_);
  if (!out.ok()) return {GradValue(out.status(), this)};
  std::vector<GradValue> result;
  for (Tensor& t : *out) result.emplace_back(std::move(t), this);
  return result;
}

GradValue GradCtx::Op(const std::string& name, std::vector<GradValue> inputs,
                      std::map<std::string, AttrValue> attrs) {
  return Ops(name, std::move(inputs), std::move(attrs))[0];
}

GradValue GradCtx::Num(double v, const GradValue& like) {
  if (!like.value().ok()) return like;
  const Tensor& t = *like.value();
  return Op("full", {},
            {{"shape", Ints{}},
             {"fill_value", v},
             {"dtype", t.dtype()},
             {"device", t.device()->name()}});
}

GradValue GradCtx::ZerosOfInput(int i) {
  const Shape& s = specs_[i].shape;
  return Op("zeros", {},
            {{"shape", Ints(s.begin(), s.end())},
             {"dtype", specs_[i].dtype},
             {"device", specs_[i].device->name()}});
}

GradValue GradCtx::SumTo(const GradValue& t, const Shape& shape) {
  if (!t.value().ok() || t.empty() || t.value()->shape() == shape) return t;
  const Shape& from = t.value()->shape();
  const int lead =
      static_cast<int>(from.size()) - static_cast<int>(shape.size());
  Ints dims;
  for (int i = 0; i < static_cast<int>(from.size()); ++i) {
    if (i < lead || (shape[i - lead] == 1 && from[i] != 1)) dims.push_back(i);
  }
  GradValue r = t;
  if (!dims.empty()) r = Op("sum", {t}, {{"dim", dims}, {"keepdim", true}});
  return Op("reshape", {r}, {{"shape", Ints(shape.begin(), shape.end())}});
}

namespace {
GradCtx* Ctx(const GradValue& a, const GradValue& b) {
  return a.ctx() != nullptr ? a.ctx() : b.ctx();
}
GradValue Binary(const char* op, const GradValue& a, const GradValue& b) {
  GradCtx* g = Ctx(a, b);
  if (g == nullptr) {
    return GradValue(absl::InternalError("tensord bug: empty gradient math"),
                     nullptr);
  }
  return g->Op(op, {a, b});
}
GradValue WithNum(const char* op, const GradValue& a, double b) {
  if (a.ctx() == nullptr) return a;
  return a.ctx()->Op(op, {a, a.ctx()->Num(b, a)});
}
}  // namespace

GradValue operator+(const GradValue& a, const GradValue& b) {
  return Binary("add", a, b);
}
GradValue operator-(const GradValue& a, const GradValue& b) {
  return Binary("sub", a, b);
}
GradValue operator*(const GradValue& a, const GradValue& b) {
  return Binary("mul", a, b);
}
GradValue operator/(const GradValue& a, const GradValue& b) {
  return Binary("div", a, b);
}
GradValue operator-(const GradValue& a) {
  return a.ctx() == nullptr ? a : a.ctx()->Op("neg", {a});
}
GradValue operator+(const GradValue& a, double b) {
  return WithNum("add", a, b);
}
GradValue operator*(const GradValue& a, double b) {
  return WithNum("mul", a, b);
}
GradValue operator*(double a, const GradValue& b) { return b * a; }
GradValue operator/(const GradValue& a, double b) {
  return WithNum("div", a, b);
}

}  // namespace tensord
