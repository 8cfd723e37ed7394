// Library-internal: the state a Tensor shares with its copies, and the one
// function every op goes through. Not for users.
#ifndef TENSORD_CLIENT_TENSOR_IMPL_H_
#define TENSORD_CLIENT_TENSOR_IMPL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/attrs.h"
#include "client/session.h"
#include "client/site.h"
#include "client/tensor.h"

namespace tensord {
inline namespace client {
namespace internal {

// Either a live handle of `session`, or a local error (handle 0). The
// destructor queues the handle's Release.
struct TensorImpl {
  TensorImpl(std::shared_ptr<Session> session, uint64_t handle)
      : session(std::move(session)), handle(handle) {}
  explicit TensorImpl(absl::Status error) : error(std::move(error)) {}
  ~TensorImpl() {
    if (session != nullptr && handle != 0) session->QueueRelease(handle);
  }
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  const std::shared_ptr<Session> session;
  const uint64_t handle = 0;
  const absl::Status error;
};

// Runs catalog op `op` on `inputs`. Returns NOT_FOUND for an unknown op and
// INVALID_ARGUMENT for a wrong arity, output count or attribute, an
// undefined input or one of another session. Inputs carrying a local error
// give outputs carrying the same error, and nothing is sent.
absl::StatusOr<std::vector<Tensor>> CallOp(
    const std::shared_ptr<Session>& session, absl::string_view op,
    absl::Span<const Tensor> inputs, const AttrMap& attrs, int num_outputs,
    const Site& site);

// The single output of `op`, or a Tensor carrying the local error. The
// session is taken from the first input carrying one.
Tensor CallOne(absl::string_view op, absl::Span<const Tensor> inputs,
               const AttrMap& attrs, const Site& site);

// Same with an explicit session (creation ops have no inputs).
Tensor CallOne(const std::shared_ptr<Session>& session, absl::string_view op,
               absl::Span<const Tensor> inputs, const AttrMap& attrs,
               const Site& site);

// Uploads `size_bytes` at `data` as a new handle, or a local error.
// `wrapped_number`: a Scalar (Put.wrapped_number).
Tensor UploadTensor(const std::shared_ptr<Session>& session, const void* data,
                    size_t size_bytes, DType dtype,
                    const std::vector<int64_t>& shape,
                    const std::string& device, bool requires_grad,
                    const Site& site, bool wrapped_number = false);

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_TENSOR_IMPL_H_
