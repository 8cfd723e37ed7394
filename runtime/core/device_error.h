// Sticky device errors: the ones after which a device context is unusable.
//
// Note [Sticky device errors]: CUDA errors such as an illegal address or a
// failed launch poison the whole context; every later call on it fails.
// Serving errors from such a daemon helps no one, so the daemon reports the
// error to every session and exits non-zero for its supervisor (systemd
// Restart=on-failure, tools/tensord.service) to start a fresh one. Device
// code builds these statuses with StickyDeviceError, which also calls the
// process-wide handler (installed by the daemon's main) exactly once; the
// handler must return promptly, as it runs on whichever thread saw the
// error.
//
// Thread-safe.
#ifndef TENSORD_RUNTIME_CORE_DEVICE_ERROR_H_
#define TENSORD_RUNTIME_CORE_DEVICE_ERROR_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tensord {

using StickyErrorHandler = void (*)(const absl::Status& error);

// INTERNAL "device DEVICE failed: WHAT ..." marked sticky; the first call
// in the process runs the handler.
absl::Status StickyDeviceError(absl::string_view device,
                               absl::string_view what);
bool IsStickyDeviceError(const absl::Status& status);
// Runs the handler with `status` (the first call in the process only; CUDA's
// own checks report through this, see runtime/cuda_device.cc). False if no
// handler is installed.
bool ReportStickyError(const absl::Status& status);
// Installs the handler (nullptr: none; sticky errors then only fail ops).
void SetStickyErrorHandler(StickyErrorHandler handler);

// Test-only fault injection: ops named `op` fail with a sticky error of
// `device` (empty op: none). Set once at start-up (tensord's hidden
// --fault_inject_sticky_error_op); read by the session core per call.
void SetInjectedStickyErrorOp(absl::string_view op);
// The injected error for a call of `op` on `device`, or OK.
absl::Status InjectedFault(absl::string_view op, absl::string_view device);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_DEVICE_ERROR_H_
