// The bulk socket's hello (docs/protocol.md "Bulk socket"), shared by the
// daemon (server/bulk_socket.h) and the C++ client (client/bulk_connection.cc):
// a client connects to Welcome.bulk_port and sends the 8-byte magic and the
// session's 32-character Welcome.bulk_token; the daemon answers one byte,
// kBulkAccepted, or closes the connection. After that the socket carries
// only the bytes of bulk Puts and Gets, in command order.
#ifndef TENSORD_PROTO_BULK_SOCKET_H_
#define TENSORD_PROTO_BULK_SOCKET_H_

#include <cstddef>

namespace tensord {

inline constexpr char kBulkMagic[] = "TDBULK01";
inline constexpr size_t kBulkMagicBytes = 8;
inline constexpr size_t kBulkTokenBytes = 32;
inline constexpr char kBulkAccepted = 'Y';

}  // namespace tensord

#endif  // TENSORD_PROTO_BULK_SOCKET_H_
