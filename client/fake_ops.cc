// The fake daemon's op math and element conversions (client/fake_ops.h).
#include "client/fake_ops.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tensord {
namespace testing {
namespace fake {
namespace {

// Type promotion order: bool < integer < floating.
int Category(v1::DType d) {
  if (d == v1::BOOL) return 0;
  if (d == v1::FLOAT32 || d == v1::FLOAT64) return 2;
  return 1;
}

// Attr `name`'s ints; empty when the call does not set it.
std::vector<int64_t> Ints(const v1::Call& call, const char* name) {
  auto it = call.attrs().find(name);
  if (it == call.attrs().end()) return {};
  return {it->second.ints().values().begin(), it->second.ints().values().end()};
}

// Attr `name`'s float; `dflt` when the call does not set it.
double Float(const v1::Call& call, const char* name, double dflt) {
  auto it = call.attrs().find(name);
  return it == call.attrs().end() ? dflt : it->second.f();
}

}  // namespace

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t ItemSize(v1::DType dtype) {
  switch (dtype) {
    case v1::FLOAT64:
    case v1::INT64:
      return 8;
    case v1::FLOAT32:
    case v1::INT32:
      return 4;
    case v1::BOOL:
    case v1::UINT8:
    case v1::INT8:
      return 1;
    default:
      return 2;
  }
}

double Load(v1::DType dtype, const char* p) {
  switch (dtype) {
    case v1::FLOAT64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case v1::INT64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case v1::INT32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case v1::BOOL:
    case v1::UINT8:
      return static_cast<uint8_t>(*p);
    case v1::INT8:
      return static_cast<int8_t>(*p);
    default: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
  }
}

void Store(v1::DType dtype, double v, char* p) {
  switch (dtype) {
    case v1::FLOAT64:
      std::memcpy(p, &v, 8);
      return;
    case v1::INT64: {
      int64_t i = static_cast<int64_t>(v);
      std::memcpy(p, &i, 8);
      return;
    }
    case v1::INT32: {
      int32_t i = static_cast<int32_t>(v);
      std::memcpy(p, &i, 4);
      return;
    }
    case v1::BOOL:
    case v1::UINT8:
    case v1::INT8:
      *p = static_cast<char>(static_cast<int>(v));
      return;
    default: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
  }
}

absl::Status Compute(const std::string& name, const v1::Call& call,
                     const std::vector<const FakeTensor*>& in, FakeTensor* r) {
  if (name == "ones" || name == "zeros" || name == "full") {
    r->shape = Ints(call, "shape");
    auto dtype = call.attrs().find("dtype");
    if (dtype != call.attrs().end()) r->dtype = dtype->second.dtype();
    double fill = name == "ones" ? 1 : name == "zeros" ? 0 : 0;
    if (name == "full") fill = Float(call, "fill_value", 0);
    r->values.assign(Numel(r->shape), fill);
    return absl::OkStatus();
  }
  if (name == "arange") {
    const double start = Float(call, "start", 0), end = Float(call, "end", 0),
                 step = Float(call, "step", 1);
    for (double v = start; v < end; v += step) r->values.push_back(v);
    r->shape = {static_cast<int64_t>(r->values.size())};
    return absl::OkStatus();
  }
  if (name == "neg" || name == "relu") {
    *r = *in[0];
    for (double& v : r->values) v = name == "neg" ? -v : std::max(v, 0.0);
    return absl::OkStatus();
  }
  if (name == "sum" || name == "mean") {
    if (!Ints(call, "dim").empty()) {
      return absl::UnimplementedError("the fake reduces over all dims only");
    }
    double s = 0;
    for (double v : in[0]->values) s += v;
    if (name == "mean") s /= in[0]->values.size();
    r->dtype = in[0]->dtype;
    r->values = {s};
    return absl::OkStatus();
  }
  if (name == "matmul") {
    const FakeTensor &a = *in[0], &b = *in[1];
    if (a.shape.size() != 2 || b.shape.size() != 2 ||
        a.shape[1] != b.shape[0]) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes [", absl::StrJoin(a.shape, ", "), "] and [",
                       absl::StrJoin(b.shape, ", "), "] cannot be multiplied"));
    }
    const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    r->dtype = a.dtype;
    r->shape = {m, n};
    r->values.assign(m * n, 0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p)
          r->values[i * n + j] += a.values[i * k + p] * b.values[p * n + j];
    return absl::OkStatus();
  }
  if (in.size() != 2) return absl::UnimplementedError("not in the fake");
  // Binary elementwise: equal shapes, or a 0-dim operand.
  const FakeTensor &a = *in[0], &b = *in[1];
  const bool a_scalar = a.shape.empty(), b_scalar = b.shape.empty();
  if (!a_scalar && !b_scalar && a.shape != b.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("shapes [", absl::StrJoin(a.shape, ", "), "] and [",
                     absl::StrJoin(b.shape, ", "), "] do not broadcast"));
  }
  const FakeTensor& big = b_scalar ? a : b;
  const FakeTensor& small = b_scalar ? b : a;
  r->shape = big.shape;
  r->dtype =
      Category(small.dtype) > Category(big.dtype) ? small.dtype : big.dtype;
  if (name == "div" && Category(r->dtype) < 2) r->dtype = v1::FLOAT32;
  const double alpha = Float(call, "alpha", 1);
  r->values.resize(big.values.size());
  for (size_t i = 0; i < r->values.size(); ++i) {
    const double x = a.values[a_scalar ? 0 : i];
    const double y = b.values[b_scalar ? 0 : i];
    r->values[i] = name == "add"   ? x + alpha * y
                   : name == "sub" ? x - alpha * y
                   : name == "mul" ? x * y
                                   : x / y;
  }
  return absl::OkStatus();
}

}  // namespace fake
}  // namespace testing
}  // namespace tensord
