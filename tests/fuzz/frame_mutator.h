// A structure-aware mutator over ClientFrame sequences (Note [Fuzz input]
// in session_driver.h), for the structured fuzzer's
// LLVMFuzzerCustomMutator: it edits sessions the way a buggy or hostile
// client would (wrong op ids, arity, dtypes, shapes and attribute values
// near the 64-bit limits, handles that are stale, foreign or reused, Put
// chunks that lie about offsets and lengths, reordered and duplicated
// commands, resumes mid-session), using the op table for attribute names
// and types so most mutants get past parsing into the ops themselves.
//
// libprotobuf-mutator is not packaged for Debian 12; this is small and
// knows the protocol.
#ifndef TENSORD_TESTS_FUZZ_FRAME_MUTATOR_H_
#define TENSORD_TESTS_FUZZ_FRAME_MUTATOR_H_

#include <cstdint>
#include <random>
#include <vector>

#include "proto/tensord.pb.h"

namespace tensord {
namespace fuzz {

// Applies one to four random edits to `frames` (an empty sequence becomes a
// small valid session first).
void MutateFrames(std::vector<v1::ClientFrame>* frames, std::mt19937_64* rng);

}  // namespace fuzz
}  // namespace tensord

#endif  // TENSORD_TESTS_FUZZ_FRAME_MUTATOR_H_
