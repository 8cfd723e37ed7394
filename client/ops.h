// Free functions for the daemon's catalog ops, PyTorch names and argument
// order. Each returns at once (see client/tensor.h on errors); attributes
// left out take the catalog's defaults on the daemon.
//
// Catalog contract (names and attributes the daemon exposes):
//   zeros/ones/empty/randn/rand (shape: ints, dtype, device)
//   full (shape, fill_value: float, dtype, device)
//   arange (start: float = 0, end: float, step: float = 1, dtype, device)
//   add/sub (a, b, alpha: float = 1), mul/div (a, b), neg/relu (x),
//   matmul (a, b), sum/mean (x, dim: ints = [] meaning all, keepdim = false),
//   reshape (x, shape: ints), transpose (x, dim0: int, dim1: int).
// Any other catalog op is reachable through Client::Call.
#ifndef TENSORD_CLIENT_OPS_H_
#define TENSORD_CLIENT_OPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/dtype.h"
#include "client/site.h"
#include "client/tensor.h"

namespace tensord {
inline namespace client {

class Client;

// dtype/device of a created tensor; unset fields take the catalog default
// (float32, the session's default device).
struct TensorOptions {
  std::optional<DType> dtype;
  std::string device;

  TensorOptions& set_dtype(DType d) {
    dtype = d;
    return *this;
  }
  TensorOptions& set_device(std::string d) {
    device = std::move(d);
    return *this;
  }
};

// ---------------------------------------------------------------- creation
Tensor zeros(Client& client, std::vector<int64_t> shape,
             const TensorOptions& options = {}, Site site = Site::Current());
Tensor ones(Client& client, std::vector<int64_t> shape,
            const TensorOptions& options = {}, Site site = Site::Current());
Tensor empty(Client& client, std::vector<int64_t> shape,
             const TensorOptions& options = {}, Site site = Site::Current());
Tensor full(Client& client, std::vector<int64_t> shape, double fill_value,
            const TensorOptions& options = {}, Site site = Site::Current());
// [0, end) step 1.
Tensor arange(Client& client, double end, const TensorOptions& options = {},
              Site site = Site::Current());
Tensor arange(Client& client, double start, double end, double step = 1.0,
              const TensorOptions& options = {}, Site site = Site::Current());
// Standard normal / uniform [0, 1); reproducible after manual_seed.
Tensor randn(Client& client, std::vector<int64_t> shape,
             const TensorOptions& options = {}, Site site = Site::Current());
Tensor rand(Client& client, std::vector<int64_t> shape,
            const TensorOptions& options = {}, Site site = Site::Current());

// ---------------------------------------------------------------- math
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0,
           Site site = Site::Current());
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0,
           Site site = Site::Current());
Tensor mul(const Tensor& a, const Tensor& b, Site site = Site::Current());
Tensor div(const Tensor& a, const Tensor& b, Site site = Site::Current());
Tensor neg(const Tensor& x, Site site = Site::Current());
Tensor relu(const Tensor& x, Site site = Site::Current());
Tensor matmul(const Tensor& a, const Tensor& b, Site site = Site::Current());
// Reduces over `dims` (empty: every dim).
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {},
           bool keepdim = false, Site site = Site::Current());
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {},
            bool keepdim = false, Site site = Site::Current());
Tensor reshape(const Tensor& x, std::vector<int64_t> shape,
               Site site = Site::Current());
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1,
                 Site site = Site::Current());

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_OPS_H_
