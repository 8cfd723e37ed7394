#include "runtime/memory/block_recycler.h"

#include <iterator>
#include <utility>

namespace tensord {

// Note [Recycling]: the steady state of a training loop is "split a cached
// block, hand it out, merge it back". Keeping retired Block objects and set
// nodes for reuse takes malloc off that path (about half of the cost of an
// Allocate+Free pair when it was there). Both pools' sets have the same type,
// so a node from one serves the other.
BlockRecycler::~BlockRecycler() {
  for (Block* b : spare_blocks_) delete b;
}

Block* BlockRecycler::NewBlock() {
  if (spare_blocks_.empty()) return new Block;
  Block* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  return b;
}

void BlockRecycler::RecycleBlock(Block* block) {
  if (spare_blocks_.size() >= kMaxSpares) {
    delete block;
    return;
  }
  block->stream_uses.clear();  // keeps its capacity
  std::vector<StreamHandle> uses = std::move(block->stream_uses);
  *block = Block{};
  block->stream_uses = std::move(uses);
  spare_blocks_.push_back(block);
}

void BlockRecycler::PoolInsert(BlockSet& set, Block* block) {
  if (spare_nodes_.empty()) {
    set.insert(block);
    return;
  }
  BlockSet::node_type node = std::move(spare_nodes_.back());
  spare_nodes_.pop_back();
  node.value() = block;
  set.insert(std::move(node));
}

BlockSet::iterator BlockRecycler::PoolErase(BlockSet& set,
                                            BlockSet::iterator it) {
  BlockSet::iterator next = std::next(it);
  BlockSet::node_type node = set.extract(it);
  if (spare_nodes_.size() < kMaxSpares) spare_nodes_.push_back(std::move(node));
  return next;
}

}  // namespace tensord
