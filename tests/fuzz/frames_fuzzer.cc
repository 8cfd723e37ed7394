// libFuzzer target (a): arbitrary bytes parsed as a ClientFrame sequence
// (Note [Fuzz input] in session_driver.h) and run as one session in
// process. Inputs that do not start with a Hello get a valid one in front,
// so the mutations are spent on the commands.
#include <cstddef>
#include <cstdint>

#include "server/session_manager.h"
#include "tests/fuzz/session_driver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tensord::v1::ClientFrame;
  std::vector<ClientFrame> frames = tensord::fuzz::ParseFrames(data, size);
  if (frames.empty() || !frames[0].has_hello()) {
    ClientFrame hello;
    hello.mutable_hello()->set_protocol_version(tensord::kProtocolVersion);
    frames.insert(frames.begin(), std::move(hello));
  }
  tensord::fuzz::RunSession(frames);
  return 0;
}
