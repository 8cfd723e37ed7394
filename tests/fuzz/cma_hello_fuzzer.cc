// libFuzzer target: arbitrary bytes as a cross-memory-attach binding hello
// (proto/cma_bind.h), what any process on the host may send the daemon's
// binding socket. Oracles: only a hello of exactly kCmaBindHelloBytes that
// starts with the magic yields a ticket, of kCmaTicketBytes, inside it; and
// no input crashes or trips a sanitizer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proto/cma_bind.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view hello(reinterpret_cast<const char*>(data), size);
  std::string_view ticket;
  if (!tensord::ParseCmaBindHello(hello, &ticket)) {
    if (size == tensord::kCmaBindHelloBytes &&
        hello.substr(0, tensord::kCmaBindMagicBytes) ==
            std::string_view(tensord::kCmaBindMagic,
                             tensord::kCmaBindMagicBytes)) {
      std::abort();  // a well-formed hello refused
    }
    return 0;
  }
  if (size != tensord::kCmaBindHelloBytes ||
      ticket.size() != tensord::kCmaTicketBytes ||
      ticket.data() != hello.data() + tensord::kCmaBindMagicBytes) {
    std::abort();
  }
  return 0;
}
