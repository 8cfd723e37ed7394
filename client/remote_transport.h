// The remote transport (client/transport.h): the daemon on another host, or
// no region mapped. Bytes go in the stream's chunks (Put.payload.data, Data
// frames), or, from BulkConnection::kMinBytes and when the daemon offers
// one, on the bulk socket's lanes (docs/protocol.md "Bulk socket";
// client/bulk_connection.h), the command still on the stream and its bytes
// following on the socket in command order.
//
// Thread safety: thread-safe; a bulk transfer holds the connection's lock
// from its command to its last byte (client/bulk_connection.h).
#ifndef TENSORD_CLIENT_REMOTE_TRANSPORT_H_
#define TENSORD_CLIENT_REMOTE_TRANSPORT_H_

#include <memory>
#include <optional>
#include <string>

#include "client/bulk_connection.h"
#include "client/transport.h"

namespace tensord {
inline namespace client {
namespace internal {

class RemoteTransport final : public Transport {
 public:
  // Whether a Hello asks for a bulk socket (BulkConnection::Wanted).
  static bool WantBulk(const ClientOptions& options);

  // A bulk socket when `welcome` offers one (connected at its first use).
  RemoteTransport(const ClientOptions& options, const v1::Welcome& welcome,
                  TransportHost* host);

  absl::StatusOr<uint64_t> Upload(const char* data, uint64_t total,
                                  const v1::Put& first,
                                  HandleMeta meta) override;
  absl::StatusOr<HostTensor> Download(uint64_t handle, const std::string& site,
                                      DownloadTarget target) override;
  void FillResumeHello(v1::Hello*) const override {}
  void Resumed(const v1::Welcome&) override {}
  void Answered(uint64_t) override {}
  void Close() override;
  absl::StatusOr<SharedAllocation> AllocateShared(size_t) override {
    return SharedAllocation{};
  }
  void FreeShared(uint64_t) override {}
  bool local() const override { return false; }
  bool cma_active() override { return false; }
  bool bulk_active() override;
  uint32_t bulk_lanes() override;
  std::string bulk_refusal() override;
  uint64_t mailbox_answers() const override { return 0; }

 private:
  // The bulk socket's transfers; nullopt when it is not usable (the stream
  // carries them). A download may still be answered on the stream (a
  // device tensor).
  std::optional<absl::StatusOr<uint64_t>> UploadBulk(const char* data,
                                                     uint64_t total,
                                                     const v1::Put& first,
                                                     HandleMeta meta);
  std::optional<absl::StatusOr<HostTensor>> DownloadBulk(
      uint64_t handle, const std::string& site, uint64_t total,
      DownloadTarget target);

  std::unique_ptr<BulkConnection> bulk_;  // null: none offered
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_REMOTE_TRANSPORT_H_
