// Hostile values for the structure-aware mutator (frame_mutator.h): sizes,
// indices and floats near the edges of what the daemon must reject, and
// handles that are stale, foreign or off by one. Every draw comes from the
// caller's generator, so a mutant is reproducible from its seed.
#ifndef TENSORD_TESTS_FUZZ_HOSTILE_VALUES_H_
#define TENSORD_TESTS_FUZZ_HOSTILE_VALUES_H_

#include <cstdint>
#include <random>
#include <vector>

namespace tensord {
namespace fuzz {

using Rng = std::mt19937_64;

// A draw in [0, n) (0 when n is 0).
inline uint64_t Below(Rng& rng, uint64_t n) { return n == 0 ? 0 : rng() % n; }
inline bool Coin(Rng& rng) { return rng() & 1; }

// Sizes and indices near the edges of what the daemon must reject.
int64_t InterestingInt(Rng& rng);
// Signed zeros, huge, tiny, infinite and NaN values.
double InterestingFloat(Rng& rng);

// One of `ids` (a sequence's known handles), sometimes off by one.
uint64_t PickHandle(Rng& rng, const std::vector<uint64_t>& ids);
// The largest of `ids` but UINT64_MAX: the next fresh handle is one more.
uint64_t MaxHandle(const std::vector<uint64_t>& ids);

}  // namespace fuzz
}  // namespace tensord

#endif  // TENSORD_TESTS_FUZZ_HOSTILE_VALUES_H_
