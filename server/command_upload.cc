// CommandRunner's writes of uploaded bytes (Note [Async uploads],
// runtime/device.h): CPU memory is written in place; a device with pinned
// staging memory gets each chunk copied into a staging buffer and then
// copied to the device on the session's current stream, and the executor
// goes on at once. The buffer returns to the staging cache from the
// device's completion thread once the copy has completed, never before: the
// pinned cache must not hand it to another transfer while the device still
// reads it. The tensor itself needs no holding: it was allocated on the
// same stream, so every later use of its memory, including a reuse after
// the handle is released, is ordered after the copy. Bytes by cross-memory
// attach or on the bulk socket are read straight into CPU storage, or into
// host memory first for a device.
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/host_copy.h"
#include "server/command_runner.h"
#include "spdlog/spdlog.h"

namespace tensord {

absl::StatusOr<AllocContext> CommandRunner::UploadContext(Device* device) {
  AllocContext ctx{config_.session, nullptr};
  if (device->kind() == DeviceKind::kCpu) return ctx;
  TD_ASSIGN_OR_RETURN(ctx.stream,
                      device->SessionStream(config_.session, stream_id_));
  return ctx;
}

absl::Status CommandRunner::WriteForPut(const Tensor& t, size_t offset,
                                        absl::string_view data) {
  Device* device = t.device();
  char* dst = static_cast<char*>(t.data()) + offset;
  const StreamHandle stream = t.storage()->stream();
  if (device->kind() == DeviceKind::kCpu || data.empty()) {
    return device->CopyFromHost(dst, data.data(), data.size(), stream);
  }
  absl::StatusOr<StagingBuffer> staging = device->AllocateStaging(data.size());
  if (!staging.ok()) {
    // No pinned memory (a device without staging, or it ran out): the
    // driver stages pageable memory itself before the call returns.
    return device->CopyFromHost(dst, data.data(), data.size(), stream);
  }
  CopyHostBytes(staging->data(), data.data(), data.size());
  // Shared: std::function copies its target. Freed on the completion thread.
  auto buffer = std::make_shared<StagingBuffer>(*std::move(staging));
  const std::string device_name = device->name();
  // A copy that fails once queued is a device error (sticky ones end the
  // daemon, Note [Sticky CUDA errors]); later reads of the tensor report it.
  auto release = [buffer, device_name](absl::Status s) {
    if (!s.ok()) {
      spdlog::warn("upload to {} failed: {}", device_name, s.ToString());
    }
  };
  return device->CopyFromHostAsync(dst, buffer->data(), data.size(), stream,
                                   std::move(release));
}

absl::Status CommandRunner::ReadBulkForPut(const v1::Put& put, const Tensor& t,
                                           size_t offset) {
  const v1::BulkSpan& span = put.payload().bulk();
  const uint64_t n = span.size();
  const std::string what = absl::StrCat("put of handle ", put.handle());
  if (t.device()->kind() == DeviceKind::kCpu) {
    return config_.bulk->Read(static_cast<char*>(t.data()) + offset, n, what,
                              span.lanes());
  }
  std::unique_ptr<char[]> host(new char[n]);
  TD_RETURN_IF_ERROR(config_.bulk->Read(host.get(), n, what, span.lanes()));
  return WriteForPut(t, offset, absl::string_view(host.get(), n));
}

absl::Status CommandRunner::ReadCmaForPut(const v1::Put& put, const Tensor& t,
                                          size_t offset) {
  const v1::CmaSpan& span = put.payload().cma();
  const uint64_t n = span.size();
  const std::string what = absl::StrCat("put of handle ", put.handle());
  if (t.device()->kind() == DeviceKind::kCpu) {
    return config_.cma->Read(span.address(),
                             static_cast<char*>(t.data()) + offset, n, what);
  }
  // A device: through host memory (its size was checked against the
  // tensor's), then as any other chunk.
  std::unique_ptr<char[]> host(new char[n]);
  TD_RETURN_IF_ERROR(config_.cma->Read(span.address(), host.get(), n, what));
  return WriteForPut(t, offset, absl::string_view(host.get(), n));
}

}  // namespace tensord
