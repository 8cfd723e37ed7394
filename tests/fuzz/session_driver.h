// Drives the session core in process (no network) with a sequence of
// ClientFrames, as the gRPC reactor would, for the fuzzers and their corpus
// replay tests.
//
// Input format (Note [Fuzz input]): the bytes of a message
// `{ repeated ClientFrame frames = 1; }`, i.e. each frame as a
// length-delimited field 1. Anything after the first unparsable field is
// ignored, so every byte string is a valid (possibly empty) session.
//
// Oracles checked after every session (a violation aborts, which libFuzzer
// reports as a crash): the session ends, every Error frame carries a
// non-zero code and a non-empty message, and the session's allocator bytes
// are back to zero on every device (nothing leaked).
//
// Thread safety: RunSession may be called from one thread at a time.
#ifndef TENSORD_TESTS_FUZZ_SESSION_DRIVER_H_
#define TENSORD_TESTS_FUZZ_SESSION_DRIVER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "proto/tensord.pb.h"

namespace tensord {
namespace fuzz {

// Note [Fuzz input]: parses as many frames as the bytes hold.
std::vector<v1::ClientFrame> ParseFrames(const uint8_t* data, size_t size);
std::string SerializeFrames(const std::vector<v1::ClientFrame>& frames);

// Runs `frames` as one session against a process-wide SessionManager over
// the CPU device (each session's memory quota: kSessionQuota) and checks
// the oracles above.
inline constexpr int64_t kSessionQuota = 16 << 20;
void RunSession(const std::vector<v1::ClientFrame>& frames);

// Runs one session whose command ring (docs/protocol.md "Command ring")
// holds `data` from position 0, published at once and read as the session
// closes; the same oracles.
void RunRingSession(const uint8_t* data, size_t size);

}  // namespace fuzz
}  // namespace tensord

#endif  // TENSORD_TESTS_FUZZ_SESSION_DRIVER_H_
