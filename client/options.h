// How a client connects to tensord and batches its commands.
#ifndef TENSORD_CLIENT_OPTIONS_H_
#define TENSORD_CLIENT_OPTIONS_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace grpc {
class ChannelCredentials;
}  // namespace grpc

namespace tensord {
inline namespace client {

inline constexpr char kDefaultAddress[] = "127.0.0.1:50051";

// PEM text for a TLS session, used for both of its channels: the gRPC stream
// (grpc::SslCredentials made from it) and the bulk socket's lanes
// (client/bulk_tls_client.h). Python's tensord.TlsCredentials holds the same.
struct TlsCredentials {
  // The CAs the daemon's certificate must chain to. Empty: the system's
  // (gRPC's default roots for the stream, OpenSSL's default verify paths for
  // the lanes).
  std::string root_certificates;
  // The client's key and certificate chain, for a daemon that asks for client
  // certificates (mutual TLS, --tls_client_ca); both or neither.
  std::string private_key;
  std::string certificate_chain;
};

struct ClientOptions {
  // "host:port". Empty: $TENSORD_ADDRESS, else 127.0.0.1:50051.
  std::string address;
  // Session token. Empty: $TENSORD_TOKEN (may be empty for --insecure).
  std::string token;
  // Shown by `tensorctl sessions`.
  std::string client_name = "tensord-cpp";
  // TLS (docs/clients.md "TLS"): the stream and the bulk socket's lanes
  // alike verify the daemon against tls->root_certificates and present the
  // client certificate if any. Set this or `credentials`, not both.
  std::optional<TlsCredentials> tls;
  // Opaque gRPC credentials for the stream alone: their certificates cannot be
  // read back, so such a session asks for no bulk socket (its large transfers
  // go on the stream). Null, and no `tls`: plaintext (local development, or
  // a daemon started --insecure).
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // How long Connect waits for the channel before UNAVAILABLE.
  absl::Duration connect_timeout = absl::Seconds(10);

  // Batching (see docs/protocol.md "A session"): a pending batch is sent at
  // a sync point, after `batch_delay`, or once it holds `batch_max_commands`
  // commands or `batch_max_bytes` bytes.
  absl::Duration batch_delay = absl::Milliseconds(2);
  size_t batch_max_bytes = size_t{1} << 20;
  size_t batch_max_commands = 1024;
  // Largest ServerFrame accepted. Data arrives in chunk_bytes (1 MiB)
  // pieces, so this never limits tensor sizes.
  int max_receive_message_bytes = 16 << 20;

  // Resume (docs/protocol.md "Resume"): when the stream breaks with a
  // transport error (UNAVAILABLE, CANCELLED), reconnect to `address` and
  // resume the session, retrying with backoff for up to `resume_timeout`;
  // nothing is lost or applied twice. Costs a copy of every sent batch until
  // its Ack. False: a broken stream fails every later read at once.
  bool resume = true;
  absl::Duration resume_timeout = absl::Seconds(20);

  // Transports (docs/clients.md "Transports"; client/transport.h): one is
  // chosen at the handshake. The two environment toggles, TENSORD_SHM=0 and
  // TENSORD_BULK=0, are read only here; everything else is an option.
  //
  // Local (docs/protocol.md "Shared memory"): Put/Get bytes go through a
  // shared-memory region of the daemon instead of the stream, when the
  // daemon offers one and it can be mapped from here (else the remote
  // transport, as with kOff). kAuto asks for a region when `address` names
  // this host (loopback, localhost, unix socket) and $TENSORD_SHM is not
  // "0"; kOn asks whatever the address.
  enum class ShmMode { kAuto, kOn, kOff };
  ShmMode shm = ShmMode::kAuto;
  // Local: the largest staging shared buffer (0: 64 MiB; at most a sixteenth
  // of a quota), through which bytes in plain memory go when cross-memory
  // attach does not take them (client/local_transport.h); bigger transfers
  // go in pieces of it.
  size_t staging_bytes = 0;
  // Local: uploads from (when the daemon has caught up with this session's
  // commands), and downloads into, plain memory of LocalTransport::kCmaMinBytes
  // (1 MiB) or more go by cross-memory attach (the daemon copies once,
  // between this process's memory and tensor storage; docs/protocol.md
  // "Cross-memory attach") when the daemon offers it and a 4-byte probe
  // transfer works, else through the staging buffer. False keeps them there.
  bool cma = true;
  // Remote: uploads from and downloads into memory of
  // BulkConnection::kMinBytes (1 MiB) or more move their bytes on TCP
  // connections beside the stream (docs/protocol.md "Bulk socket") when the
  // daemon offers them, at the speed of a bare socket instead of through
  // HTTP/2 frames. Plaintext sessions use plain TCP; with `tls` every lane is
  // a TLS connection verified as the stream is (client/bulk_tls_client.h),
  // and a lane whose handshake fails leaves the transfers on the stream; with
  // opaque `credentials` none is asked for. False, or $TENSORD_BULK=0, keeps
  // them on the stream.
  bool bulk = true;
  // The most connections ("lanes", proto/bulk_socket.h) of the bulk socket
  // to open; a transfer of 8 MiB or more is striped over them, each lane's
  // span moved on a thread of its own, so loopback TCP's work spreads over
  // cores. 0: as many as the daemon offers (Welcome.bulk_lanes).
  uint32_t bulk_lanes = 0;
  // Local: a thread waiting for an answer the daemon announces in the
  // region's mailbox (a result's first Get through the region: item() of a
  // fresh result; docs/protocol.md "Mailbox") spins this long before it
  // sleeps: waking a sleeping thread costs tens of microseconds on a VM,
  // more than the rest of such a round trip. The spin costs CPU only while
  // waiting, for at most this long per wait. Zero sleeps at once.
  absl::Duration sync_spin = absl::Microseconds(200);

  // Note [Transfer buffers] (runtime/core/transfer_buffers.h): the first
  // session whose transfers go over the stream sets glibc's malloc
  // thresholds for the whole process (mmap 8 MiB, trim 32 MiB), so that
  // chunk-sized transfer buffers stay mapped instead of being page-faulted
  // in again for every chunk (a 256 MiB download otherwise faults ~65k
  // pages). Skipped where the environment sets malloc tunables. False:
  // malloc stays as the application configured it.
  bool tune_malloc = true;
};

// `options` with address and token filled from the environment and
// defaults where empty.
ClientOptions ResolveOptions(ClientOptions options);

// True for addresses that name this host: loopback IPs, localhost, unix
// sockets. ClientOptions::ShmMode::kAuto asks for a region only there.
bool IsSameHostAddress(absl::string_view address);
// The host of an address naming a TCP endpoint ("host:port", "[v6]:port",
// with or without a dns:///, ipv4: or ipv6: scheme): where the bulk socket
// connects. Empty for unix sockets and anything else.
std::string TcpHostOf(absl::string_view address);

// Whether a Hello asks for a shared-memory region (ShmMode; kAuto: same
// host, unless $TENSORD_SHM=0).
bool WantShm(const ClientOptions& options);

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_OPTIONS_H_
