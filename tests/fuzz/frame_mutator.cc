// Sequence-level edits (frame_mutator.h): commands added, dropped,
// swapped, duplicated or given odd seqs, and resumes between batches; each
// command's own edits are command_mutator.h's.
#include "tests/fuzz/frame_mutator.h"

#include <limits>
#include <utility>
#include <vector>

#include "tests/fuzz/command_mutator.h"
#include "tests/fuzz/hostile_values.h"

namespace tensord {
namespace fuzz {
namespace {

// Every handle the sequence mentions, plus ids no one created.
std::vector<uint64_t> KnownHandles(const std::vector<v1::ClientFrame>& frames) {
  std::vector<uint64_t> ids = {0, 1, std::numeric_limits<uint64_t>::max()};
  for (const auto& f : frames) {
    for (const auto& c : f.batch().commands()) {
      if (c.has_put()) ids.push_back(c.put().handle());
      for (uint64_t id : c.call().outputs()) ids.push_back(id);
      for (uint64_t id : c.backward().outputs()) ids.push_back(id);
      if (c.has_get_grad()) ids.push_back(c.get_grad().output());
    }
  }
  return ids;
}

// Renumbers seqs 1, 2, ... (most of the time: stale seqs are a mutation).
void Renumber(std::vector<v1::ClientFrame>* frames) {
  uint64_t seq = 0;
  for (auto& f : *frames) {
    for (auto& c : *f.mutable_batch()->mutable_commands()) c.set_seq(++seq);
  }
}

void MutateOnce(std::vector<v1::ClientFrame>* frames, Rng& rng) {
  const std::vector<uint64_t> ids = KnownHandles(*frames);
  // Frames after the Hello that are batches.
  std::vector<v1::Batch*> batches;
  for (size_t i = 1; i < frames->size(); ++i) {
    if ((*frames)[i].has_batch())
      batches.push_back((*frames)[i].mutable_batch());
  }
  if (batches.empty()) {
    frames->emplace_back().mutable_batch();
    batches.push_back(frames->back().mutable_batch());
  }
  v1::Batch* batch = batches[Below(rng, batches.size())];
  auto* commands = batch->mutable_commands();
  const int n = commands->size();
  v1::Command* cmd = n ? commands->Mutable(Below(rng, n)) : nullptr;
  switch (Below(rng, 12)) {
    case 0:
    case 1:
      *commands->Add() = NewCommand(rng, ids);
      if (n > 0) commands->SwapElements(n, Below(rng, n + 1));
      break;
    case 2:
      if (n > 0) commands->DeleteSubrange(Below(rng, n), 1);
      break;
    case 3:
      if (n > 1) commands->SwapElements(Below(rng, n), Below(rng, n));
      break;
    case 4:
      if (cmd) *commands->Add() = *cmd;  // a duplicate (reused ids)
      break;
    case 5: {  // a resume between two batches
      v1::ClientFrame hello;
      hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
      hello.mutable_hello()->set_resume_received_seq(Below(rng, 64));
      frames->insert(frames->begin() + 1 + Below(rng, frames->size()),
                     std::move(hello));
      break;
    }
    case 6:
      if (cmd) cmd->set_seq(Coin(rng) ? 0 : cmd->seq() + Below(rng, 5) - 2);
      return;  // keep the odd seq
    default:
      if (cmd != nullptr) MutateCommand(rng, ids, cmd);
  }
  Renumber(frames);
}

}  // namespace

void MutateFrames(std::vector<v1::ClientFrame>* frames, Rng* rng) {
  if (frames->empty() || !(*frames)[0].has_hello()) {
    v1::ClientFrame hello;
    hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
    frames->insert(frames->begin(), std::move(hello));
  }
  const int edits = 1 + static_cast<int>(Below(*rng, 4));
  for (int i = 0; i < edits; ++i) MutateOnce(frames, *rng);
}

}  // namespace fuzz
}  // namespace tensord
