// tensord::SharedBuffer: host memory shared with the daemon, the analogue of
// CUDA pinned memory (docs/protocol.md "Shared buffers").
//
//   absl::StatusOr<tensord::SharedBuffer> buf =
//       client->AllocateShared(n * sizeof(float));
//   float* x = static_cast<float*>(buf->data());  // fill it
//   tensord::Tensor t = client->Upload(x, tensord::DType::kFloat32, {n});
//   absl::StatusOr<size_t> got = t.DownloadInto(buf->data(), buf->size());
//
// An upload whose bytes, or a DownloadInto whose destination, lie entirely
// inside one shared buffer (and are at least LocalTransport::kMinBytes, 256
// KiB) travels as one Put or Get naming the buffer: the daemon copies once,
// between the buffer and tensor storage, with no staging copy, slots or
// chunks. Smaller transfers, and any other memory, take the ordinary path.
//
// Lifetime rule: an upload from a shared buffer returns only once the
// daemon has acknowledged the Put, that is, copied the bytes out, so the
// buffer may be rewritten as soon as Upload returns; DownloadInto returns
// once the bytes are in the buffer. What the caller must not do is write
// the buffer from another thread while an upload from it is running, or
// touch the destination while a download into it is running.
//
// Fallback: when this session shares no memory with the daemon (another
// host, TENSORD_SHM=0, ClientOptions::shm = kOff, tensord --shm_bytes=0),
// Client::AllocateShared returns plain page-aligned memory instead
// (shared() false), so the same program runs anywhere, its transfers on the
// ordinary path. Errors of the daemon (over quota, shared buffers turned off)
// are returned as they are. Either kind of memory starts zeroed.
//
// Ownership: move-only; destroying it unmaps the memory and frees the
// daemon's buffer (a batched Release). It may outlive its Client; the
// daemon frees every buffer when the session ends. Thread safety: like a
// plain pointer to memory; the object itself is not synchronized.
#ifndef TENSORD_CLIENT_SHARED_BUFFER_H_
#define TENSORD_CLIENT_SHARED_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tensord {
inline namespace client {

class RegionMapping;
namespace internal {
class Session;
}  // namespace internal

class SharedBuffer {
 public:
  SharedBuffer();  // empty: data() null, size() 0
  ~SharedBuffer();
  SharedBuffer(SharedBuffer&& other) noexcept;
  SharedBuffer& operator=(SharedBuffer&& other) noexcept;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  // True when the daemon shares this memory (one-copy transfers); false for
  // the plain-memory fallback.
  bool shared() const { return region_ != 0; }
  // The daemon's region id for it (Put/Get.shm_region); 0 when not shared.
  uint64_t region() const { return region_; }

  // Library-internal (Client::AllocateShared): shared memory mapped by
  // `mapping`, or plain memory of `bytes` when `mapping` is null.
  SharedBuffer(std::shared_ptr<internal::Session> session, uint64_t region,
               std::unique_ptr<RegionMapping> mapping, size_t bytes);
  static SharedBuffer Plain(void* memory, size_t bytes);

 private:
  void Reset();

  std::shared_ptr<internal::Session> session_;  // shared memory only
  std::unique_ptr<RegionMapping> mapping_;
  void* data_ = nullptr;
  size_t size_ = 0;
  uint64_t region_ = 0;
};

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_SHARED_BUFFER_H_
