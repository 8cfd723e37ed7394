#include "client/chunking.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tensord {
inline namespace client {

std::vector<Chunk> PlanChunks(uint64_t total_bytes, uint64_t chunk_bytes) {
  std::vector<Chunk> chunks;
  if (chunk_bytes == 0) chunk_bytes = 1;
  uint64_t offset = 0;
  do {
    Chunk chunk;
    chunk.offset = offset;
    chunk.size = std::min(chunk_bytes, total_bytes - offset);
    offset += chunk.size;
    chunk.last = offset == total_bytes;
    chunks.push_back(chunk);
  } while (offset < total_bytes);
  return chunks;
}

uint64_t EffectiveChunkBytes(uint64_t chunk_bytes, uint64_t max_frame_bytes) {
  if (chunk_bytes == 0) chunk_bytes = uint64_t{1} << 20;
  if (max_frame_bytes == 0) max_frame_bytes = uint64_t{8} << 20;
  if (max_frame_bytes > 2 * kFrameOverheadBytes) {
    chunk_bytes = std::min(chunk_bytes, max_frame_bytes - kFrameOverheadBytes);
  } else {
    chunk_bytes = std::min(chunk_bytes, max_frame_bytes / 2);
  }
  return std::max<uint64_t>(chunk_bytes, 1);
}

absl::StatusOr<uint64_t> TensorBytes(DType dtype,
                                     const std::vector<int64_t>& shape) {
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "negative dimension in shape [", absl::StrJoin(shape, ", "), "]"));
    }
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() /
                              static_cast<uint64_t>(d) / ItemSize(dtype)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape [", absl::StrJoin(shape, ", "), "] is too large"));
    }
    numel *= static_cast<uint64_t>(d);
  }
  return numel * ItemSize(dtype);
}

}  // namespace client
}  // namespace tensord
