// A compute device as the runtime sees it: a narrow interface.
//
// Devices are created once at daemon start and live until it exits; every
// method is thread-safe. Ownership: the Device owns its allocator.
#ifndef TENSORD_RUNTIME_DEVICE_H_
#define TENSORD_RUNTIME_DEVICE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/core/strided.h"
#include "runtime/memory/caching_allocator.h"

namespace tensord {

enum class DeviceKind { kCpu, kCuda };

// Host memory from a device's staging allocator (CUDA: pinned), returned to
// it on destruction. Move-only; empty when default-constructed.
class StagingBuffer {
 public:
  StagingBuffer() = default;
  StagingBuffer(Allocator* allocator, void* data, size_t size)
      : allocator_(allocator), data_(data), size_(size) {}
  StagingBuffer(StagingBuffer&& other) noexcept { *this = std::move(other); }
  StagingBuffer& operator=(StagingBuffer&& other) noexcept {
    if (this != &other) {
      Reset();
      allocator_ = other.allocator_;
      data_ = other.data_;
      size_ = other.size_;
      other.allocator_ = nullptr;
      other.data_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }
  ~StagingBuffer() { Reset(); }
  // `bytes` from `allocator` for the daemon (session 0, no stream): a buffer
  // is freed only after its copy completed, so any later transfer may reuse
  // it.
  static absl::StatusOr<StagingBuffer> Allocate(Allocator* allocator,
                                                size_t bytes) {
    absl::StatusOr<void*> p = allocator->Allocate(bytes, AllocContext{});
    if (!p.ok()) return p.status();
    return StagingBuffer(allocator, *p, bytes);
  }

  char* data() const { return static_cast<char*>(data_); }
  size_t size() const { return size_; }

 private:
  void Reset() {
    if (allocator_ != nullptr) allocator_->Free(data_);
    allocator_ = nullptr;
  }
  Allocator* allocator_ = nullptr;
  void* data_ = nullptr;
  size_t size_ = 0;
};

struct DeviceDescription {
  std::string name;  // "cpu", "cuda:0"
  DeviceKind kind = DeviceKind::kCpu;
  std::string description;  // CPU model / GPU name
  uint64_t total_memory = 0;
  std::string compute_capability;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceDescription& description() const = 0;
  // Every device allocates through a caching allocator (stats, snapshot,
  // quotas and empty_cache are read from it by the Admin service).
  virtual CachingAllocator* allocator() = 0;

  // Copies `bytes` between host memory and this device's memory, in order on
  // `stream`; returns once the copy is complete (CPU: CopyHostBytes,
  // runtime/host_copy.h).
  virtual absl::Status CopyFromHost(void* dst, const void* src, size_t bytes,
                                    StreamHandle stream) = 0;
  virtual absl::Status CopyToHost(void* dst, const void* src, size_t bytes,
                                  StreamHandle stream) = 0;
  // Note [Async downloads] (completion_queue.h): a read that does not wait.
  // Host memory for CopyToHostAsync's `dst` (CUDA: pinned, from a caching
  // allocator, so repeated downloads reuse buffers instead of pinning pages
  // each time). UNIMPLEMENTED on devices whose reads are synchronous anyway
  // (CPU): callers then use CopyToHost.
  virtual absl::StatusOr<StagingBuffer> AllocateStaging(size_t bytes);
  // The caching allocator behind AllocateStaging (CUDA: pinned host
  // memory), or nullptr when there is none. The Admin service reports it as
  // the device's "pinned staging" pool and empties it with the device's
  // cache (server/admin_memory.h).
  virtual CachingAllocator* staging_allocator() { return nullptr; }
  // Enqueues a copy of `bytes` from this device's `src` to host `dst` on
  // `stream` and returns without waiting. `on_done` runs exactly once: with
  // OK once the copy (and everything queued on `stream` before it) has
  // completed, or with the error. It runs on a daemon thread, or on the
  // calling thread when the copy failed to start (and, by default, on devices
  // that copy synchronously); it must hand work off rather than block. The
  // caller keeps `src`'s storage and `dst` alive until `on_done` runs.
  virtual void CopyToHostAsync(void* dst, const void* src, size_t bytes,
                               StreamHandle stream,
                               std::function<void(absl::Status)> on_done);

  // Note [Async uploads]: a write that does not wait. Enqueues a copy of
  // `bytes` from host `src` (a StagingBuffer of this device) to this
  // device's `dst` on `stream`. OK: the copy was queued, and `on_done` runs
  // exactly once when it has completed (with its status), on a daemon thread
  // (on the calling thread for devices that copy synchronously, the
  // default); the caller keeps `src` alive and unused until then, so a
  // pinned buffer goes back to the staging cache only once the device has
  // read it. An error: nothing is left in flight and `on_done` never runs.
  // `dst` needs no such care: work on `stream` is ordered after the copy,
  // and its storage is reused on that stream only.
  virtual absl::Status CopyFromHostAsync(
      void* dst, const void* src, size_t bytes, StreamHandle stream,
      std::function<void(absl::Status)> on_done);

  // Waits until all work queued on `stream` is done (CUDA: nullptr waits for
  // every stream of the device).
  virtual absl::Status Synchronize(StreamHandle stream) = 0;
  // Waits until the work queued on every stream of `session` is done (a
  // Sync), not for other sessions' (CUDA: each of its streams; the default,
  // for devices without session streams: Synchronize(nullptr)).
  virtual absl::Status SynchronizeSession(uint64_t session) {
    (void)session;
    return Synchronize(nullptr);
  }

  // Note [Session streams]: each session's ops on a device go onto its own
  // streams, created on first use, so sessions run concurrently and the
  // executor only enqueues. `stream_id` is the session's stream selector
  // (SetOptions.stream): 0 is its default stream, other ids are extra
  // streams of the same session (torch.cuda.Stream), each created lazily per
  // device. CPU: nullptr for every id (kernels run synchronously, in command
  // order, so streams and events order nothing there; the session core
  // validates them the same way on every device).
  virtual absl::StatusOr<StreamHandle> SessionStream(uint64_t session,
                                                     uint32_t stream_id) {
    (void)session;
    (void)stream_id;
    return StreamHandle{nullptr};
  }
  // The session's default stream (stream id 0).
  absl::StatusOr<StreamHandle> SessionStream(uint64_t session) {
    return SessionStream(session, 0);
  }
  // Note [Session events]: events are named by the session's own ids. Record
  // marks the current end of `stream`'s queue (creating the event on first
  // use; recording again moves it); Wait makes later work on `stream` wait on
  // the device for the event's last record. The caller (the session core)
  // checks that `event` was recorded on this device before waiting.
  // CPU: no-ops.
  virtual absl::Status RecordSessionEvent(uint64_t session, uint64_t event,
                                          StreamHandle stream) {
    (void)session, (void)event, (void)stream;
    return absl::OkStatus();
  }
  virtual absl::Status WaitSessionEvent(uint64_t session, uint64_t event,
                                        StreamHandle stream) {
    (void)session, (void)event, (void)stream;
    return absl::OkStatus();
  }
  // Forgets one event of `session` (the client dropped it).
  virtual void ReleaseSessionEvent(uint64_t session, uint64_t event) {
    (void)session, (void)event;
  }
  // Forgets `session`'s streams and events; work already queued still
  // completes.
  virtual void ReleaseSessionStreams(uint64_t session) { (void)session; }

  const std::string& name() const { return description().name; }
  DeviceKind kind() const { return description().kind; }
};

// The devices one daemon serves, cpu first; `cuda:N` follow when present.
class DeviceRegistry {
 public:
  // Discovers devices: always the CPU; CUDA GPUs when built with CUDA and a
  // driver is present (otherwise logs why not). `allowed` restricts by name
  // (empty: all).
  static std::unique_ptr<DeviceRegistry> Create(
      const std::vector<std::string>& allowed = {});

  explicit DeviceRegistry(std::vector<std::unique_ptr<Device>> devices);
  // nullptr if there is no such device.
  Device* Find(absl::string_view name) const;
  Device* cpu() const { return devices_.front().get(); }
  // Where a command that names no device puts its tensors, until a session
  // sets its own (SetOptions.default_device): the CPU unless
  // SetDefaultDevice chose another, as PyTorch creates tensors on the CPU
  // unless told otherwise.
  Device* default_device() const { return default_; }
  // "cuda" means cuda:0. NOT_FOUND names the devices served.
  absl::Status SetDefaultDevice(absl::string_view name);
  // "cpu, cuda:0" — for messages.
  std::string Names() const;
  const std::vector<std::unique_ptr<Device>>& devices() const {
    return devices_;
  }

 private:
  std::vector<std::unique_ptr<Device>> devices_;
  Device* default_;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_DEVICE_H_
