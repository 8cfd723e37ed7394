// The gRPC channel of a session: its HTTP/2 transfer settings (Note
// [Transfer window] in server/daemon_listeners.cc), reconnect backoff for a
// resume, and the first connection.
#ifndef TENSORD_CLIENT_CHANNEL_H_
#define TENSORD_CLIENT_CHANNEL_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/status/statusor.h"
#include "client/options.h"

namespace tensord {
inline namespace client {
namespace internal {

// A channel to `options.address` (options resolved), connected within
// options.connect_timeout; UNAVAILABLE, saying what to check, otherwise.
absl::StatusOr<std::shared_ptr<grpc::Channel>> ConnectChannel(
    const ClientOptions& options);

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_CHANNEL_H_
