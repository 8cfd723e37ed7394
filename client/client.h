// tensord::Client: one session with a tensord daemon.
//
//   auto client = tensord::Client::Connect({});        // $TENSORD_ADDRESS
//   tensord::Tensor x = client.value()->FromVector<float>({1, 2, 3}, {3});
//   tensord::Tensor y = (x * 2.0).sum();
//   absl::StatusOr<float> v = y.item<float>();          // the one round trip
//
// Commands are batched (client/session.h): ops return Tensors at once and the
// network is paid per sync point (to_vector/item/shape before the Ack,
// synchronize), not per op.
//
// Ownership: Connect returns the sole owner of the connection. Destroying
// the Client sends what is pending and ends the session (the daemon releases
// every handle); Tensors that outlive it fail their reads with
// FAILED_PRECONDITION. Thread safety: all methods may be called from any
// thread.
#ifndef TENSORD_CLIENT_CLIENT_H_
#define TENSORD_CLIENT_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/attrs.h"
#include "client/dtype.h"
#include "client/options.h"
#include "client/shared_buffer.h"
#include "client/site.h"
#include "client/tensor.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {

namespace internal {
class Session;
}  // namespace internal

// Optional upload parameters.
struct UploadOptions {
  std::string device;  // empty: the session's default device
  bool requires_grad = false;
};

class Client {
 public:
  // Connects, authenticates (Hello/Welcome) and starts the session. Errors:
  // UNAVAILABLE (no daemon at the address), UNAUTHENTICATED (bad token),
  // FAILED_PRECONDITION (protocol version mismatch), each with the daemon's
  // message.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      const ClientOptions& options = ClientOptions());

  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // ------------------------------------------------------------ Welcome
  const std::string& address() const;
  const std::string& session_id() const;
  const std::string& server_version() const;
  const std::string& default_device() const;
  std::vector<v1::DeviceInfo> devices() const;
  // The op catalog: schema by name (null if unknown), and all names.
  const v1::OpSchema* FindOp(absl::string_view name) const;
  std::vector<std::string> op_names() const;

  // ------------------------------------------------------------ ops
  // Runs any catalog op. NOT_FOUND for an unknown name; INVALID_ARGUMENT for
  // a wrong arity/output count/attribute. Daemon-side failures show later,
  // on the outputs.
  absl::StatusOr<std::vector<Tensor>> Call(absl::string_view op,
                                           std::vector<Tensor> inputs,
                                           AttrMap attrs = {},
                                           int num_outputs = 1,
                                           Site site = Site::Current());

  // Uploads a C-contiguous little-endian buffer of ItemSize(dtype) *
  // numel(shape) bytes (read during the call only). Any size: large tensors
  // travel as chunk_bytes Put chunks, one frame at a time, or through the
  // daemon's shared-memory region; bytes inside a SharedBuffer as one Put
  // naming it (client/shared_buffer.h).
  Tensor Upload(const void* data, DType dtype, std::vector<int64_t> shape,
                const UploadOptions& options = {}, Site site = Site::Current());

  // Uploads `data` with `shape` (empty shape and one element: a 0-dim
  // tensor). A size mismatch gives a Tensor carrying INVALID_ARGUMENT.
  template <typename T>
  Tensor FromVector(const std::vector<T>& data, std::vector<int64_t> shape,
                    const UploadOptions& options = {},
                    Site site = Site::Current()) {
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(data.begin(), data.end());
      return Upload(bytes.data(), DType::kBool, std::move(shape), options,
                    site);
    } else {
      return UploadBytes(data.data(), data.size() * sizeof(T),
                         DTypeOf<T>::value, std::move(shape), options, site);
    }
  }

  // Host memory shared with the daemon, the analogue of CUDA pinned
  // memory: uploads from it and DownloadInto it cost one copy (the
  // daemon's). Plain memory when the session shares none with the daemon
  // (SharedBuffer::shared() false); the daemon's error when it refuses (over
  // the quota: RESOURCE_EXHAUSTED; shared buffers turned off). A round trip.
  absl::StatusOr<SharedBuffer> AllocateShared(size_t bytes);

  // ------------------------------------------------------------ session
  // Sync point: waits for every command so far; returns the first op error
  // raised since the previous synchronize (as torch.cuda.synchronize would
  // surface an asynchronous error).
  absl::Status synchronize();
  // Reseeds the session's generator (batched; no round trip).
  absl::Status manual_seed(uint64_t seed);
  absl::Status set_grad_enabled(bool enabled);
  absl::Status set_default_device(const std::string& device);
  // TF32 for float32 matmuls/convolutions on CUDA (torch.backends.cuda.
  // matmul.allow_tf32; off by default; the CPU ignores it).
  absl::Status set_allow_tf32(bool allow);
  // Streams and events (torch.cuda.Stream/Event with client-chosen ids):
  // later ops go onto stream `stream_id` (0: the default stream; others are
  // created on first use); record_event marks the current stream's queue,
  // wait_event makes the current stream wait for an event's last record.
  // On the CPU they order nothing but are checked the same way: waiting on
  // an event never recorded is INVALID_ARGUMENT from the next synchronize().
  absl::Status set_stream(uint32_t stream_id);
  absl::Status record_event(uint64_t event);
  absl::Status wait_event(uint64_t event);
  // Sends pending commands now (normally the batching timer does).
  absl::Status Flush();
  // How many times the client blocked waiting for the daemon (a value read,
  // synchronize(), a fresh tensor's shape...): each is at least a round trip
  // to a remote daemon. A training step (upload, zero_grad, backward, step,
  // loss.item()) waits once. Python's Session.waits.
  int64_t waits() const;
  // True when tensor bytes travel through the daemon's shared-memory region
  // (ClientOptions::shm) rather than the stream.
  bool shm_active() const;
  // True when uploads from and downloads into plain memory of 1 MiB or more
  // go by cross-memory attach (ClientOptions::cma); the first call may
  // probe it with a 4-byte round trip.
  bool cma_active() const;
  // True when large transfers without a region go on the bulk socket
  // (ClientOptions::bulk); the first call may connect it.
  bool bulk_active() const;
  // How many connections ("lanes", ClientOptions::bulk_lanes) the bulk
  // socket has: large transfers are striped over them. 0 while none.
  uint32_t bulk_lanes() const;
  // Why the bulk socket did not connect, e.g. "TLS handshake with tensord's
  // bulk socket at 10.0.0.2 failed: certificate verify failed: hostname
  // mismatch" (large transfers then go on the stream); empty when it did or
  // was not tried.
  std::string bulk_refusal() const;

  // Library-internal (ops.h).
  const std::shared_ptr<internal::Session>& internal_session() const {
    return session_;
  }

 private:
  explicit Client(std::shared_ptr<internal::Session> session);
  Tensor UploadBytes(const void* data, size_t size_bytes, DType dtype,
                     std::vector<int64_t> shape, const UploadOptions& options,
                     const Site& site);

  std::shared_ptr<internal::Session> session_;
};

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_CLIENT_H_
