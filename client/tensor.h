// tensord::Tensor: a client-side reference to a daemon handle.
//
// Ownership: a Tensor shares one TensorImpl (session + handle) with its
// copies; when the last copy goes, the handle's Release is queued (batched,
// non-blocking). A Tensor keeps its session's state alive, not the
// connection: once the Client is destroyed, reads fail with
// FAILED_PRECONDITION.
//
// Errors stay with values (docs/protocol.md "Errors"): ops return a Tensor at
// once and never block; a failure shows when the value is read (shape(),
// to_vector(), item(), Client::synchronize()). A failure the client detects
// itself (unknown op, bad attribute, closed session) is carried by the Tensor
// as a local error and propagates to every op that uses it, exactly like a
// daemon-side poisoned handle.
//
// Thread safety: a Tensor may be used and copied from any thread (like
// std::shared_ptr); the session serializes commands.
#ifndef TENSORD_CLIENT_TENSOR_H_
#define TENSORD_CLIENT_TENSOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/download.h"
#include "client/dtype.h"
#include "client/site.h"

namespace tensord {
inline namespace client {

namespace internal {
class Session;
struct TensorImpl;
}  // namespace internal

// A C++ number used as an operand (`x * 2.0`). As in Python/PyTorch it
// travels as a wrapped number, a 0-dim tensor (floating -> float64, exact;
// integral -> int64; bool -> bool) that only changes the result dtype when of
// a higher category than every tensor operand, a floating one to float32
// (docs/protocol.md "Scalars").
class Scalar {
 public:
  template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Scalar(T value) {  // NOLINT(runtime/explicit)
    if constexpr (std::is_same_v<T, bool>) {
      dtype_ = DType::kBool;
      b_ = value;
    } else if constexpr (std::is_integral_v<T>) {
      dtype_ = DType::kInt64;
      i_ = static_cast<int64_t>(value);
    } else {
      dtype_ = DType::kFloat64;  // exact; promotes as a Python float
      f_ = static_cast<double>(value);
    }
  }
  DType dtype() const { return dtype_; }
  // The 0-dim tensor's bytes (ItemSize(dtype()) of them).
  const void* data() const;

 private:
  DType dtype_;
  double f_ = 0;
  int64_t i_ = 0;
  bool b_ = false;
};

class Tensor {
 public:
  // An undefined tensor: every read fails, every op on it fails locally.
  Tensor() = default;
  // A tensor that carries a local error (non-OK `error`).
  static Tensor FromError(absl::Status error);
  // Used by the library; `impl` is shared.
  explicit Tensor(std::shared_ptr<internal::TensorImpl> impl);

  bool defined() const { return impl_ != nullptr; }
  // The daemon handle; 0 when undefined or locally failed.
  uint64_t handle() const;

  // Metadata from the Ack (waits for it only when not yet known). A
  // poisoned handle returns its error: code, op, call site, reason.
  absl::StatusOr<std::vector<int64_t>> shape() const;
  absl::StatusOr<DType> dtype() const;
  absl::StatusOr<std::string> device() const;
  absl::StatusOr<int64_t> numel() const;
  absl::StatusOr<int64_t> dim() const;
  absl::StatusOr<bool> requires_grad() const;
  // OK unless the value is spoiled (waits for the Ack like shape()).
  absl::Status status() const;

  // Sync point: downloads the values (raw bytes + meta).
  absl::StatusOr<HostTensor> Download(Site site = Site::Current()) const;
  // Sync point: the same bytes (C-contiguous, in the tensor's dtype) written
  // to the caller's `dst` of `capacity` bytes, e.g. a buffer reused across
  // downloads, which then costs no fresh memory. INVALID_ARGUMENT, nothing
  // written, when the tensor holds more than `capacity` bytes. Returns the
  // number of bytes written.
  absl::StatusOr<size_t> DownloadInto(void* dst, size_t capacity,
                                      Site site = Site::Current()) const;

  // Sync point: all values, converted to T (numeric cast, like .tolist()).
  // A big tensor of T's own dtype whose size the client already knows lands
  // straight in the vector (DownloadInto: no copy out of a staging buffer).
  template <typename T>
  absl::StatusOr<std::vector<T>> to_vector(Site site = Site::Current()) const {
    if constexpr (!std::is_same_v<T, bool>) {  // vector<bool> packs its bits
      if (std::optional<int64_t> n = DirectNumel(DTypeOf<T>::value)) {
        std::vector<T> out(static_cast<size_t>(*n));
        absl::StatusOr<size_t> wrote =
            DownloadInto(out.data(), out.size() * sizeof(T), site);
        if (!wrote.ok()) return wrote.status();
        return out;
      }
    }
    absl::StatusOr<HostTensor> host = Download(site);
    if (!host.ok()) return host.status();
    return ToVector<T>(*host);
  }
  // Sync point: the single value of a one-element tensor.
  template <typename T>
  absl::StatusOr<T> item(Site site = Site::Current()) const {
    absl::StatusOr<HostTensor> host = Download(site);
    if (!host.ok()) return host.status();
    if (host->numel() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("item() needs a tensor with one element, this one has ",
                       host->numel()));
    }
    return ToVector<T>(*host)[0];
  }

  // Ops (see client/ops.h for the free-function forms and attributes).
  Tensor matmul(const Tensor& other, Site site = Site::Current()) const;
  Tensor sum(std::vector<int64_t> dims = {}, bool keepdim = false,
             Site site = Site::Current()) const;
  Tensor mean(std::vector<int64_t> dims = {}, bool keepdim = false,
              Site site = Site::Current()) const;
  Tensor relu(Site site = Site::Current()) const;
  Tensor neg(Site site = Site::Current()) const;
  Tensor reshape(std::vector<int64_t> shape, Site site = Site::Current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1,
                   Site site = Site::Current()) const;

  // ------------------------------------------------------------ autograd
  // (client/tensor_autograd.cc; free functions and NoGradGuard in
  // client/autograd.h). The graph lives in the daemon.
  //
  // One Backward command, queued: nothing waits for the daemon (issue 27).
  // A failing backward (graph freed, saved tensor modified in place, root
  // without grad) is returned by the next read (to_vector, item) or
  // synchronize(), naming the backward's call site (Note [Deferred backward
  // errors] in client/session_autograd.cc); here only what the client sees
  // itself (an undefined or locally poisoned tensor). `gradient`: undefined
  // for a scalar root.
  absl::Status backward(const Tensor& gradient = Tensor(),
                        bool retain_graph = false, bool create_graph = false,
                        Site site = Site::Current()) const;
  // The accumulated gradient (GetGrad; waits for its Ack), or an undefined
  // Tensor when there is none (PyTorch C++'s convention).
  absl::StatusOr<Tensor> grad() const;
  // Assigns .grad (an undefined `grad`: None). Queued, no wait.
  absl::Status set_grad(const Tensor& grad) const;
  // Marks this leaf as requiring grad (or not). Queued, no wait; on a
  // non-leaf the daemon reports the error at the next sync point.
  absl::Status set_requires_grad(bool requires_grad,
                                 Site site = Site::Current()) const;
  // set_requires_grad, returning this tensor (a local error on failure).
  Tensor requires_grad_(bool requires_grad = true,
                        Site site = Site::Current()) const;
  // Shares storage, outside the graph (catalog op `detach`).
  Tensor detach(Site site = Site::Current()) const;
  absl::StatusOr<bool> is_leaf() const;
  // The graph node's name ("MulBackward0"); empty for leaves.
  absl::StatusOr<std::string> grad_fn() const;

  const std::shared_ptr<internal::TensorImpl>& impl() const { return impl_; }

 private:
  // to_vector's fast path: the element count of a tensor of `dtype` of 1 MiB
  // or more whose metadata the client holds without waiting for an Ack;
  // nullopt otherwise (another dtype, small, poisoned, None, not known yet).
  std::optional<int64_t> DirectNumel(DType dtype) const;

  std::shared_ptr<internal::TensorImpl> impl_;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_TENSOR_H_
