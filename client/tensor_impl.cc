#include "client/tensor_impl.h"

#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tensord {
inline namespace client {
namespace internal {

namespace {

// What CallOp and CallOne share: checks `inputs` against `op`, queues the
// Call and returns the first of `num_outputs` consecutive new handles.
// An input carrying a local error sets `*poison` to it, and nothing is sent.
absl::StatusOr<uint64_t> Enqueue(const std::shared_ptr<Session>& session,
                                 absl::string_view op_name,
                                 absl::Span<const Tensor> inputs,
                                 const AttrMap& attrs, int num_outputs,
                                 const Site& site, absl::Status* poison) {
  if (session == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(op_name, ": no tensord session (undefined inputs?)"));
  }
  const v1::OpSchema* op = session->FindOp(op_name);
  if (op == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "tensord has no op '", op_name, "' (its catalog has ",
        session->welcome().ops_size(), " ops; see Client::op_names())"));
  }
  const int n = static_cast<int>(inputs.size());
  if (n < op->min_inputs() || (op->max_inputs() >= 0 && n > op->max_inputs())) {
    std::string want =
        op->max_inputs() == op->min_inputs()
            ? absl::StrCat(op->min_inputs())
            : (op->max_inputs() < 0
                   ? absl::StrCat("at least ", op->min_inputs())
                   : absl::StrCat(op->min_inputs(), "..", op->max_inputs()));
    return absl::InvalidArgumentError(
        absl::StrCat(op_name, " takes ", want, " inputs, got ", n));
  }
  if (num_outputs < 0 ||
      (op->num_outputs() >= 0 && num_outputs != op->num_outputs())) {
    return absl::InvalidArgumentError(absl::StrCat(
        op_name, " has ", op->num_outputs(), " outputs, not ", num_outputs));
  }
  google::protobuf::Map<std::string, v1::AttrValue> wire_attrs;
  absl::Status attrs_status = AttrsToProto(*op, attrs, &wire_attrs);
  if (!attrs_status.ok()) return attrs_status;

  absl::InlinedVector<uint64_t, 4> handles;
  for (int i = 0; i < n; ++i) {
    const std::shared_ptr<TensorImpl>& impl = inputs[i].impl();
    if (impl == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(op_name, ": input ", i, " is an undefined Tensor"));
    }
    if (!impl->error.ok()) {
      *poison = impl->error;
      return 0;
    }
    if (impl->session != session) {
      return absl::InvalidArgumentError(absl::StrCat(
          op_name, ": input ", i, " belongs to another tensord session"));
    }
    handles.push_back(impl->handle);
  }
  return session->EnqueueCall(*op, handles, wire_attrs, num_outputs, site);
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> CallOp(
    const std::shared_ptr<Session>& session, absl::string_view op_name,
    absl::Span<const Tensor> inputs, const AttrMap& attrs, int num_outputs,
    const Site& site) {
  absl::Status poison;
  absl::StatusOr<uint64_t> first =
      Enqueue(session, op_name, inputs, attrs, num_outputs, site, &poison);
  if (!first.ok()) return first.status();
  if (!poison.ok()) {
    // Poisoned locally: the outputs carry the same error (nothing sent).
    return std::vector<Tensor>(num_outputs, Tensor::FromError(poison));
  }
  std::vector<Tensor> result;
  result.reserve(num_outputs);
  for (int i = 0; i < num_outputs; ++i) {
    result.emplace_back(std::make_shared<TensorImpl>(session, *first + i));
  }
  return result;
}

Tensor CallOne(const std::shared_ptr<Session>& session, absl::string_view op,
               absl::Span<const Tensor> inputs, const AttrMap& attrs,
               const Site& site) {
  // No vector of outputs: this is the path of every single-output op.
  absl::Status poison;
  absl::StatusOr<uint64_t> first =
      Enqueue(session, op, inputs, attrs, 1, site, &poison);
  if (!first.ok()) return Tensor::FromError(first.status());
  if (!poison.ok()) return Tensor::FromError(poison);
  return Tensor(std::make_shared<TensorImpl>(session, *first));
}

Tensor CallOne(absl::string_view op, absl::Span<const Tensor> inputs,
               const AttrMap& attrs, const Site& site) {
  const std::shared_ptr<Session>* session = nullptr;
  for (const Tensor& input : inputs) {
    if (input.impl() == nullptr) continue;
    // A local error propagates even without a session.
    if (!input.impl()->error.ok())
      return Tensor::FromError(input.impl()->error);
    if (session == nullptr) session = &input.impl()->session;
  }
  if (session == nullptr) {
    return Tensor::FromError(absl::InvalidArgumentError(
        absl::StrCat(op, ": called on undefined Tensors")));
  }
  return CallOne(*session, op, inputs, attrs, site);
}

Tensor UploadTensor(const std::shared_ptr<Session>& session, const void* data,
                    size_t size_bytes, DType dtype,
                    const std::vector<int64_t>& shape,
                    const std::string& device, bool requires_grad,
                    const Site& site, bool wrapped_number) {
  if (session == nullptr) {
    return Tensor::FromError(
        absl::FailedPreconditionError("upload: no tensord session"));
  }
  absl::StatusOr<uint64_t> bytes = TensorBytes(dtype, shape);
  if (!bytes.ok()) return Tensor::FromError(bytes.status());
  if (*bytes != size_bytes) {
    return Tensor::FromError(absl::InvalidArgumentError(
        absl::StrCat("upload: ", size_bytes, " bytes of data for a ",
                     DTypeName(dtype), " tensor of shape [",
                     absl::StrJoin(shape, ", "), "] (", *bytes, " bytes)")));
  }
  absl::StatusOr<uint64_t> handle =
      session->EnqueueUpload(data, dtype, shape, device, requires_grad,
                             site.ToString(), wrapped_number);
  if (!handle.ok()) return Tensor::FromError(handle.status());
  return Tensor(std::make_shared<TensorImpl>(session, *handle));
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
