// Conversions between the wire (proto/) and the runtime's types. The only
// place that knows both.
#ifndef TENSORD_SERVER_PROTO_CONVERT_H_
#define TENSORD_SERVER_PROTO_CONVERT_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "proto/tensord.pb.h"
#include "runtime/ops/attrs.h"
#include "runtime/ops/op_def.h"

namespace tensord {

absl::StatusOr<std::map<std::string, AttrValue>> AttrsFromProto(
    const google::protobuf::Map<std::string, v1::AttrValue>& attrs);

// The attributes of a Call of `op`: parsed, checked and completed with the
// row's defaults (CallAttrs; `*storage` holds them unless the row's
// prebuilt defaults serve).
absl::StatusOr<const Attrs*> CallAttrsFromProto(
    const OpDef& op,
    const google::protobuf::Map<std::string, v1::AttrValue>& attrs,
    Attrs* storage);

v1::OpSchema OpSchemaToProto(uint32_t id, const OpDef& op);

v1::DeviceInfo DeviceToProto(const DeviceDescription& device);

// A user-facing status with the op and call site that caused it. The
// message is cut at kMaxErrorMessageBytes and the site at kMaxSiteBytes
// (server/wire_limits.h): a status is copied into every handle it spoils.
v1::Status StatusToProto(const absl::Status& status, const std::string& op,
                         const std::string& site);
// The same, shared: the error a poisoned handle holds (Note [Poisoned
// handles] in handle_table.h).
std::shared_ptr<const v1::Status> SharedStatusProto(const absl::Status& status,
                                                    const std::string& op,
                                                    const std::string& site);

// The short form of `status` an Ack carries past kMaxAckErrorBytes: its
// code, op, and the first kShortErrorBytes of its message and site.
v1::Status ShortStatus(const v1::Status& status);

}  // namespace tensord

#endif  // TENSORD_SERVER_PROTO_CONVERT_H_
