// Conversions between the wire's Status, gRPC's Status and absl::Status.
// The daemon's op and call site become the message prefix the user sees:
// "matmul at train.cc:42: shapes [64, 100] and [64, 10] cannot be multiplied".
#ifndef TENSORD_CLIENT_STATUS_H_
#define TENSORD_CLIENT_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {

// OK for code 0; otherwise the same code with "op at site: message".
absl::Status StatusFromProto(const v1::Status& status);

// gRPC and absl codes are numerically identical.
absl::Status StatusFromGrpc(const grpc::Status& status);

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_STATUS_H_
