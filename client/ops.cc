#include "client/ops.h"

#include <utility>

#include "client/client.h"
#include "client/tensor_impl.h"

namespace tensord {
inline namespace client {
namespace {

using internal::CallOne;

// Only what the caller chose is sent; the rest are catalog defaults.
AttrMap CreationAttrs(std::vector<int64_t> shape,
                      const TensorOptions& options) {
  AttrMap attrs{{"shape", std::move(shape)}};
  if (options.dtype.has_value()) attrs.emplace("dtype", *options.dtype);
  if (!options.device.empty()) attrs.emplace("device", options.device);
  return attrs;
}

Tensor Create(Client& client, absl::string_view op, AttrMap attrs,
              const Site& site) {
  return CallOne(client.internal_session(), op, {}, attrs, site);
}

}  // namespace

Tensor zeros(Client& client, std::vector<int64_t> shape,
             const TensorOptions& options, Site site) {
  return Create(client, "zeros", CreationAttrs(std::move(shape), options),
                site);
}

Tensor ones(Client& client, std::vector<int64_t> shape,
            const TensorOptions& options, Site site) {
  return Create(client, "ones", CreationAttrs(std::move(shape), options), site);
}

Tensor empty(Client& client, std::vector<int64_t> shape,
             const TensorOptions& options, Site site) {
  return Create(client, "empty", CreationAttrs(std::move(shape), options),
                site);
}

Tensor full(Client& client, std::vector<int64_t> shape, double fill_value,
            const TensorOptions& options, Site site) {
  AttrMap attrs = CreationAttrs(std::move(shape), options);
  attrs.emplace("fill_value", fill_value);
  return Create(client, "full", std::move(attrs), site);
}

Tensor arange(Client& client, double end, const TensorOptions& options,
              Site site) {
  AttrMap attrs = CreationAttrs({}, options);
  attrs.erase("shape");
  attrs.emplace("end", end);
  return Create(client, "arange", std::move(attrs), site);
}

Tensor arange(Client& client, double start, double end, double step,
              const TensorOptions& options, Site site) {
  AttrMap attrs = CreationAttrs({}, options);
  attrs.erase("shape");
  attrs.emplace("start", start);
  attrs.emplace("end", end);
  attrs.emplace("step", step);
  return Create(client, "arange", std::move(attrs), site);
}

Tensor randn(Client& client, std::vector<int64_t> shape,
             const TensorOptions& options, Site site) {
  return Create(client, "randn", CreationAttrs(std::move(shape), options),
                site);
}

Tensor rand(Client& client, std::vector<int64_t> shape,
            const TensorOptions& options, Site site) {
  return Create(client, "rand", CreationAttrs(std::move(shape), options), site);
}

Tensor add(const Tensor& a, const Tensor& b, double alpha, Site site) {
  AttrMap attrs;
  if (alpha != 1.0) attrs.emplace("alpha", alpha);
  return CallOne("add", {a, b}, attrs, site);
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha, Site site) {
  AttrMap attrs;
  if (alpha != 1.0) attrs.emplace("alpha", alpha);
  return CallOne("sub", {a, b}, attrs, site);
}

Tensor mul(const Tensor& a, const Tensor& b, Site site) {
  return CallOne("mul", {a, b}, {}, site);
}

Tensor div(const Tensor& a, const Tensor& b, Site site) {
  return CallOne("div", {a, b}, {}, site);
}

Tensor neg(const Tensor& x, Site site) { return CallOne("neg", {x}, {}, site); }

Tensor relu(const Tensor& x, Site site) {
  return CallOne("relu", {x}, {}, site);
}

Tensor matmul(const Tensor& a, const Tensor& b, Site site) {
  return CallOne("matmul", {a, b}, {}, site);
}

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim,
           Site site) {
  AttrMap attrs;
  if (!dims.empty()) attrs.emplace("dim", std::move(dims));
  if (keepdim) attrs.emplace("keepdim", true);
  return CallOne("sum", {x}, attrs, site);
}

Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim,
            Site site) {
  AttrMap attrs;
  if (!dims.empty()) attrs.emplace("dim", std::move(dims));
  if (keepdim) attrs.emplace("keepdim", true);
  return CallOne("mean", {x}, attrs, site);
}

Tensor reshape(const Tensor& x, std::vector<int64_t> shape, Site site) {
  return CallOne("reshape", {x}, {{"shape", std::move(shape)}}, site);
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, Site site) {
  return CallOne("transpose", {x}, {{"dim0", dim0}, {"dim1", dim1}}, site);
}

}  // namespace client
}  // namespace tensord
