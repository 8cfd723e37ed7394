// BlockRecycler: keeps retired Block objects and free-set nodes of a
// CachingAllocator for reuse, so splitting and merging blocks does not call
// malloc (Note [Recycling] in block_recycler.cc).
//
// Ownership: owns the spare Blocks it holds (deleted with it); a Block from
// NewBlock is the caller's until passed back to RecycleBlock. Thread safety:
// none; its owner guards it (CachingAllocator::mu_).
#ifndef TENSORD_RUNTIME_MEMORY_BLOCK_RECYCLER_H_
#define TENSORD_RUNTIME_MEMORY_BLOCK_RECYCLER_H_

#include <cstddef>
#include <vector>

#include "runtime/memory/block.h"

namespace tensord {

class BlockRecycler {
 public:
  BlockRecycler() = default;
  BlockRecycler(const BlockRecycler&) = delete;
  BlockRecycler& operator=(const BlockRecycler&) = delete;
  ~BlockRecycler();

  // A default Block (a spare one when there is one).
  Block* NewBlock();
  // Takes `block` back: reset and kept, or deleted when enough are kept.
  void RecycleBlock(Block* block);
  // set.insert(block), on a spare node when there is one.
  void PoolInsert(BlockSet& set, Block* block);
  // set.erase(it), keeping its node; returns the iterator after it.
  BlockSet::iterator PoolErase(BlockSet& set, BlockSet::iterator it);

  static constexpr size_t kMaxSpares = 1024;

 private:
  std::vector<Block*> spare_blocks_;
  std::vector<BlockSet::node_type> spare_nodes_;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_BLOCK_RECYCLER_H_
