#include "client/status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace tensord {
inline namespace client {

absl::Status StatusFromProto(const v1::Status& status) {
  if (status.code() == 0) return absl::OkStatus();
  std::string prefix = status.op();
  if (!status.site().empty()) {
    absl::StrAppend(&prefix, prefix.empty() ? "" : " ", "at ", status.site());
  }
  int code = status.code();
  if (code < 0 || code > 16)
    code = static_cast<int>(absl::StatusCode::kUnknown);
  return absl::Status(static_cast<absl::StatusCode>(code),
                      prefix.empty()
                          ? status.message()
                          : absl::StrCat(prefix, ": ", status.message()));
}

absl::Status StatusFromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

}  // namespace client
}  // namespace tensord
