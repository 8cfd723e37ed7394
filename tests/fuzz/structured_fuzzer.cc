// libFuzzer target (b): structure-aware. Inputs are ClientFrame sequences
// (Note [Fuzz input]); LLVMFuzzerCustomMutator edits them as a hostile
// client would (frame_mutator.h), and sometimes lets libFuzzer flip bytes
// of the whole encoding, so both protocol-level and byte-level mutants run.
#include <cstring>
#include <random>

#include "tests/fuzz/frame_mutator.h"
#include "tests/fuzz/session_driver.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensord::fuzz::RunSession(tensord::fuzz::ParseFrames(data, size));
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
                                          size_t max_size, unsigned seed) {
  std::mt19937_64 rng(seed);
  if (rng() % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
  auto frames = tensord::fuzz::ParseFrames(data, size);
  tensord::fuzz::MutateFrames(&frames, &rng);
  const std::string out = tensord::fuzz::SerializeFrames(frames);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
