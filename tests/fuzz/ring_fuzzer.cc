// libFuzzer target (c): arbitrary bytes as the contents of a session's
// command ring (docs/protocol.md "Command ring"), published as one head, and
// read by the session's ring reader in process: record lengths, magics, wrap
// markers and frames are all the fuzzer's. Oracles as for the other targets
// (session_driver.h): the session ends, errors say why, memory returns.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/session_driver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensord::fuzz::RunRingSession(data, size);
  return 0;
}
