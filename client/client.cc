#include "client/client.h"

#include <utility>

#include "client/chunking.h"
#include "client/session.h"
#include "client/tensor_impl.h"

namespace tensord {
inline namespace client {

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    const ClientOptions& options) {
  absl::StatusOr<std::shared_ptr<internal::Session>> session =
      internal::Session::Open(options);
  if (!session.ok()) return session.status();
  return std::unique_ptr<Client>(new Client(*std::move(session)));
}

Client::Client(std::shared_ptr<internal::Session> session)
    : session_(std::move(session)) {}

Client::~Client() { session_->Close(); }

const std::string& Client::address() const { return session_->address(); }
const std::string& Client::session_id() const {
  return session_->welcome().session_id();
}
const std::string& Client::server_version() const {
  return session_->welcome().server_version();
}
const std::string& Client::default_device() const {
  return session_->welcome().default_device();
}

std::vector<v1::DeviceInfo> Client::devices() const {
  const auto& devices = session_->welcome().devices();
  return std::vector<v1::DeviceInfo>(devices.begin(), devices.end());
}

const v1::OpSchema* Client::FindOp(absl::string_view name) const {
  return session_->FindOp(name);
}

std::vector<std::string> Client::op_names() const {
  std::vector<std::string> names;
  for (const v1::OpSchema& op : session_->welcome().ops()) {
    names.push_back(op.name());
  }
  return names;
}

absl::StatusOr<std::vector<Tensor>> Client::Call(absl::string_view op,
                                                 std::vector<Tensor> inputs,
                                                 AttrMap attrs, int num_outputs,
                                                 Site site) {
  return internal::CallOp(session_, op, inputs, attrs, num_outputs, site);
}

Tensor Client::Upload(const void* data, DType dtype, std::vector<int64_t> shape,
                      const UploadOptions& options, Site site) {
  absl::StatusOr<uint64_t> bytes = TensorBytes(dtype, shape);
  if (!bytes.ok()) return Tensor::FromError(bytes.status());
  return UploadBytes(data, *bytes, dtype, std::move(shape), options, site);
}

Tensor Client::UploadBytes(const void* data, size_t size_bytes, DType dtype,
                           std::vector<int64_t> shape,
                           const UploadOptions& options, const Site& site) {
  return internal::UploadTensor(session_, data, size_bytes, dtype, shape,
                                options.device, options.requires_grad, site);
}

absl::Status Client::synchronize() { return session_->Sync(); }
int64_t Client::waits() const { return session_->waits(); }

absl::Status Client::manual_seed(uint64_t seed) {
  v1::SetOptions options;
  options.set_seed(seed);
  return session_->EnqueueOptions(options);
}

absl::Status Client::set_grad_enabled(bool enabled) {
  v1::SetOptions options;
  options.set_grad_enabled(enabled);
  return session_->EnqueueOptions(options);
}

absl::Status Client::set_default_device(const std::string& device) {
  v1::SetOptions options;
  options.set_default_device(device);
  return session_->EnqueueOptions(options);
}

absl::Status Client::set_allow_tf32(bool allow) {
  return session_->SetAllowTf32(allow);
}
absl::Status Client::set_stream(uint32_t stream_id) {
  return session_->SetStream(stream_id);
}
absl::Status Client::record_event(uint64_t event) {
  return session_->RecordEvent(event);
}
absl::Status Client::wait_event(uint64_t event) {
  return session_->WaitEvent(event);
}

absl::Status Client::Flush() { return session_->Flush(); }
bool Client::shm_active() const { return session_->transport().local(); }
bool Client::cma_active() const { return session_->transport().cma_active(); }
bool Client::bulk_active() const { return session_->transport().bulk_active(); }
std::string Client::bulk_refusal() const {
  return session_->transport().bulk_refusal();
}
uint32_t Client::bulk_lanes() const {
  return session_->transport().bulk_lanes();
}

}  // namespace client
}  // namespace tensord
