// A TransportHost for the transports' unit tests (local_transport_test,
// remote_transport_test): it plays the session and the daemon at once.
// Puts are recorded (on_put sees each as it is appended, while its buffer
// still holds its bytes) and acknowledged at once; requests are answered
// at once by `answer` (no answer: the session's error). Single-threaded,
// as the tests drive it.
#ifndef TENSORD_CLIENT_FAKE_TRANSPORT_HOST_H_
#define TENSORD_CLIENT_FAKE_TRANSPORT_HOST_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/dtype.h"
#include "client/transport.h"

namespace tensord {
inline namespace client {
namespace internal {

class FakeTransportHost final : public TransportHost {
 public:
  // The answer to request `id` (`command` as queued, `target` its
  // destination); nullopt: left unanswered.
  std::function<std::optional<PendingDownload>(
      uint64_t id, const v1::Command& command, DownloadTarget target)>
      answer;
  std::function<void(const v1::Put&)> on_put;

  std::vector<v1::Put> puts;  // as appended, payload included
  std::vector<v1::Command> requests;
  std::map<uint64_t, HandleMeta> metas;  // what KnownBytes and WaitMeta see
  std::vector<uint64_t> released, released_shared;
  int uploads = 0;  // BeginUpload..EndUpload pairs
  bool in_upload = false;
  int flushes = 0;
  bool caught_up = true;

  absl::StatusOr<uint64_t> BeginUpload(HandleMeta* meta) override {
    if (in_upload) return absl::InternalError("nested upload");
    in_upload = true;
    if (meta->device.empty()) meta->device = "cpu";
    return next_handle_++;
  }
  absl::StatusOr<uint64_t> AppendPut(
      uint64_t handle, const v1::Put& first, const HandleMeta& meta,
      uint64_t offset, bool last, size_t /*inline_bytes*/,
      absl::FunctionRef<void(v1::Payload*)> payload) override {
    if (!in_upload) return absl::InternalError("Put outside an upload");
    v1::Put put = offset == 0 ? first : v1::Put();
    put.set_handle(handle);
    put.set_offset(offset);
    put.set_last(last);
    payload(put.mutable_payload());
    if (offset == 0) metas[handle] = meta;
    if (on_put) on_put(put);
    puts.push_back(put);
    return ++seq_;
  }
  absl::StatusOr<uint64_t> EndUpload(uint64_t handle,
                                     absl::Status status) override {
    in_upload = false;
    ++uploads;
    if (!status.ok()) {
      metas.erase(handle);
      return status;
    }
    return handle;
  }
  absl::StatusOr<uint64_t> SendRequest(
      absl::FunctionRef<void(uint64_t, v1::Command*)> fill,
      DownloadTarget target, bool flush) override {
    const uint64_t id = next_request_++;
    v1::Command command;
    fill(id, &command);
    requests.push_back(command);
    ++seq_;
    if (flush) ++flushes;
    if (answer) {
      std::optional<PendingDownload> got = answer(id, command, target);
      if (got.has_value()) answers_[id] = std::move(*got);
    }
    return id;
  }
  PendingDownload AwaitAnswer(uint64_t id) override {
    auto it = answers_.find(id);
    if (it == answers_.end()) {
      PendingDownload none;
      none.done = true;
      none.status = absl::UnavailableError("no answer (fake host)");
      return none;
    }
    PendingDownload got = std::move(it->second);
    answers_.erase(it);
    return got;
  }
  bool AnswerPending(uint64_t id) override { return !answers_.count(id); }
  void DropAnswer(uint64_t id) override { answers_.erase(id); }
  absl::Status Flush() override {
    ++flushes;
    return absl::OkStatus();
  }
  absl::Status AwaitAck(uint64_t seq) override {
    return seq <= seq_ ? absl::OkStatus()
                       : absl::InternalError("waits for a command not sent");
  }
  bool DaemonCaughtUp() override { return caught_up; }
  std::optional<uint64_t> KnownBytes(uint64_t handle) override {
    auto it = metas.find(handle);
    if (it == metas.end()) return std::nullopt;
    return HandleTable::HealthyBytes(it->second).value_or(0);
  }
  absl::StatusOr<HandleMeta> WaitMeta(uint64_t handle) override {
    auto it = metas.find(handle);
    if (it == metas.end()) return absl::FailedPreconditionError("unknown");
    return it->second;
  }
  void QueueRelease(uint64_t handle) override {
    metas.erase(handle);
    released.push_back(handle);
  }
  void ReleaseShared(uint64_t region) override {
    released_shared.push_back(region);
  }

  // The Data frame that answers a Get of `total` float bytes, its bytes not
  // included (a region or bulk answer) or `bytes` (a stream answer).
  static v1::Data DataFor(uint64_t id, uint64_t total, uint64_t offset,
                          bool last) {
    v1::Data data;
    data.set_request_id(id);
    data.set_offset(offset);
    data.set_total_bytes(total);
    data.set_last(last);
    if (offset == 0) {
      data.mutable_meta()->set_dtype(ToWire(DType::kUInt8));
      data.mutable_meta()->add_shape(static_cast<int64_t>(total));
      data.mutable_meta()->set_device("cpu");
    }
    return data;
  }

 private:
  uint64_t next_handle_ = 1;
  uint64_t next_request_ = 1;
  uint64_t seq_ = 0;
  std::map<uint64_t, PendingDownload> answers_;
};

// The tests' uploads: n bytes of a pattern that no shift or truncation
// preserves, the first Put of a uint8 tensor of n elements, and its metadata.
inline std::string Pattern(size_t n) {
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 7 + i / 251);
  return bytes;
}

inline v1::Put FirstOf(uint64_t n) {
  v1::Put first;
  first.set_dtype(ToWire(DType::kUInt8));
  first.add_shape(static_cast<int64_t>(n));
  return first;
}

inline HandleMeta MetaOf(uint64_t n) {
  return HandleMeta{
      DType::kUInt8, {static_cast<int64_t>(n)}, "", false, absl::OkStatus()};
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_FAKE_TRANSPORT_HOST_H_
