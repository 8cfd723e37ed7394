// The cross-memory-attach binding hello (docs/protocol.md "Cross-memory
// attach"), shared by the daemon (server/cma_binder.h) and the C++ client
// (client/local_transport.cc, through CmaBindThisProcess; the Python client
// spells the same bytes in tensord/_cma.py). A same-host client process
// connects to the unix socket Welcome.cma_socket names and sends kCmaBindMagic
// and Welcome.cma_ticket; the daemon answers one byte, kCmaBound or
// kCmaRefused, and closes. The daemon learns who connected from the kernel
// (SO_PEERCRED), never from these bytes: the ticket only says which session to
// bind.
#ifndef TENSORD_PROTO_CMA_BIND_H_
#define TENSORD_PROTO_CMA_BIND_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace tensord {

inline constexpr char kCmaBindMagic[] = "TDCMA001";
inline constexpr size_t kCmaBindMagicBytes = 8;
inline constexpr size_t kCmaTicketBytes = 32;
inline constexpr size_t kCmaBindHelloBytes =
    kCmaBindMagicBytes + kCmaTicketBytes;
inline constexpr char kCmaBound = 'Y';
inline constexpr char kCmaRefused = 'N';

// The daemon's half: true when `hello` is a binding hello (exactly
// kCmaBindHelloBytes, starting with kCmaBindMagic), with `*ticket` the
// kCmaTicketBytes after the magic (a view into `hello`); false for any
// other bytes. Fuzzed by tests/fuzz/cma_hello_fuzzer.cc.
bool ParseCmaBindHello(std::string_view hello, std::string_view* ticket);

// The client's half: binds the session holding `ticket` to the calling
// process through the socket `socket_name` (Welcome.cma_socket: "@name" is
// abstract, anything else a path). True when the daemon answered kCmaBound
// within `timeout_ms`. Async-signal-safe (no allocation): a forked child of
// a threaded process may call it.
bool CmaBindThisProcess(const std::string& socket_name,
                        const std::string& ticket, int timeout_ms);

}  // namespace tensord

#endif  // TENSORD_PROTO_CMA_BIND_H_
