#include "runtime/core/device_error.h"

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"

namespace tensord {
namespace {

constexpr char kStickyPayload[] = "type.tensord/sticky-device-error";
std::atomic<StickyErrorHandler> handler{nullptr};
std::atomic<bool> reported{false};
// Written once before any session starts; read-only afterwards.
std::string* injected_op = new std::string;

}  // namespace

absl::Status StickyDeviceError(absl::string_view device,
                               absl::string_view what) {
  absl::Status status = absl::InternalError(absl::StrCat(
      "device ", device, " failed: ", what,
      " (a sticky error: the device context is unusable; tensord exits so "
      "that its supervisor restarts it)"));
  status.SetPayload(kStickyPayload, absl::Cord(device));
  ReportStickyError(status);
  return status;
}

bool ReportStickyError(const absl::Status& status) {
  StickyErrorHandler h = handler.load();
  if (h == nullptr) return false;
  if (!reported.exchange(true)) h(status);
  return true;
}

bool IsStickyDeviceError(const absl::Status& status) {
  return status.GetPayload(kStickyPayload).has_value();
}

void SetStickyErrorHandler(StickyErrorHandler h) { handler.store(h); }

void SetInjectedStickyErrorOp(absl::string_view op) {
  *injected_op = std::string(op);
}

absl::Status InjectedFault(absl::string_view op, absl::string_view device) {
  if (injected_op->empty() || op != *injected_op) return absl::OkStatus();
  return StickyDeviceError(
      device, absl::StrCat("an injected illegal memory access in ", op,
                           " (--fault_inject_sticky_error_op)"));
}

}  // namespace tensord
