// A session's random generator: a Philox key (the seed) and a counter offset.
//
// Each random op reserves a range of counters, so results depend only on the
// seed and the sequence of random ops (reproducible run to run, on any
// device, with any thread split). Used by one session executor at a time.
#ifndef TENSORD_RUNTIME_GENERATOR_H_
#define TENSORD_RUNTIME_GENERATOR_H_

#include <cstdint>

namespace tensord {

class Generator {
 public:
  explicit Generator(uint64_t seed = kDefaultSeed) : seed_(seed) {}

  void ManualSeed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }

  // Reserves counters for `numel` values (4 per counter); returns the first.
  uint64_t Reserve(int64_t numel) {
    const uint64_t first = offset_;
    offset_ += (static_cast<uint64_t>(numel) + 3) / 4;
    return first;
  }

  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_GENERATOR_H_
