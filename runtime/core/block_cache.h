// A process-wide cache of memory blocks for protobuf arenas (the frames of
// the wire, both ends).
//
// Note [Frame block cache]: each batch a client fills, each frame the daemon
// parses and each Ack it builds lives on its own arena of 16 KiB..1 MiB
// blocks. From malloc, those blocks go back to the kernel when freed (heap
// trimming, unmapping) and the next frame page-faults them in again: in
// `perf` of tiny ops that was the largest single cost on both ends. Blocks
// kept here stay mapped and warm. Use as ArenaOptions::block_alloc /
// block_dealloc. Thread-safe.
#ifndef TENSORD_RUNTIME_CORE_BLOCK_CACHE_H_
#define TENSORD_RUNTIME_CORE_BLOCK_CACHE_H_

#include <cstddef>

#include "google/protobuf/arena.h"

namespace tensord {

// A block of exactly `size` bytes: a cached one of that size, else malloc's.
void* AllocateCachedBlock(size_t size);
// Keeps `block` (from AllocateCachedBlock with the same `size`) for reuse
// while the cache holds under its cap (32 MiB), else frees it.
void FreeCachedBlock(void* block, size_t size);
// Bytes the cache holds for reuse now (tests, metrics).
size_t CachedBlockBytes();

// Options of a frame's arena: 16 KiB..1 MiB blocks from this cache.
inline google::protobuf::ArenaOptions FrameArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 16 << 10;
  options.max_block_size = 1 << 20;
  options.block_alloc = &AllocateCachedBlock;
  options.block_dealloc = &FreeCachedBlock;
  return options;
}

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_BLOCK_CACHE_H_
