// Command-level edits for the structure-aware mutator (frame_mutator.h):
// calls with wrong op ids, arity and attribute names, types and values;
// Puts whose shapes, dtypes, offsets and payloads lie; Backwards with odd
// roots, grads and flags; and new commands of every kind built to be mostly
// valid, using the op table so most mutants get past parsing into the ops.
#ifndef TENSORD_TESTS_FUZZ_COMMAND_MUTATOR_H_
#define TENSORD_TESTS_FUZZ_COMMAND_MUTATOR_H_

#include <cstdint>
#include <vector>

#include "proto/tensord.pb.h"
#include "tests/fuzz/hostile_values.h"

namespace tensord {
namespace fuzz {

// A new command of a random kind, built to be mostly valid; `ids` are the
// sequence's known handles (its outputs are fresh ones past them).
v1::Command NewCommand(Rng& rng, const std::vector<uint64_t>& ids);

// One edit of `cmd` in place: a field of its Call, Put or Backward, or (any
// other kind) a new command instead.
void MutateCommand(Rng& rng, const std::vector<uint64_t>& ids,
                   v1::Command* cmd);

}  // namespace fuzz
}  // namespace tensord

#endif  // TENSORD_TESTS_FUZZ_COMMAND_MUTATOR_H_
