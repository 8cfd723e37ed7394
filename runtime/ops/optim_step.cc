// The optimizer step rows' shared checks and gradient lists (optim_step.h).
#include "runtime/ops/optim_step.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace optim_step {

absl::Status CheckGroups(const char* op, absl::Span<const Tensor> in, int64_t n,
                         int groups) {
  // n is compared by division: n * groups overflows for a hostile n.
  if (n < 0 || static_cast<int64_t>(in.size()) % groups != 0 ||
      static_cast<int64_t>(in.size()) / groups != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " expects ", groups, " lists of n=", n,
                     " tensors each, got ", in.size(), " inputs"));
  }
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& p = in[i];
    TD_RETURN_IF_ERROR(RequireFloating(p, op));
    for (int g = 1; g < groups; ++g) {
      const Tensor& t = in[g * n + i];
      if (t.shape() != p.shape() || t.dtype() != p.dtype() ||
          t.device() != p.device()) {
        return absl::InvalidArgumentError(absl::StrCat(
            op, ": tensor ", g * n + i, " (", DTypeName(t.dtype()),
            ShapeToString(t.shape()), ") must be like parameter ", i, " (",
            DTypeName(p.dtype()), ShapeToString(p.shape()), ")"));
      }
    }
  }
  return absl::OkStatus();
}
bool Fast(absl::Span<const Tensor> in, int64_t n, int64_t i, int groups) {
  const Tensor& p = in[i];
#if TENSORD_WITH_CUDA
  const bool fused_device = true;  // every device kind there is
#else
  const bool fused_device = p.device()->kind() == DeviceKind::kCpu;
#endif
  if (!fused_device ||
      (p.dtype() != DType::kFloat32 && p.dtype() != DType::kFloat64)) {
    return false;
  }
  for (int g = 0; g < groups; ++g) {
    if (!in[g * n + i].is_contiguous()) return false;
  }
  return true;
}

bool OnCpu(const Tensor& t) { return t.device()->kind() == DeviceKind::kCpu; }

void ForEachCpuChunk(absl::Span<const Tensor> in, int64_t n, int groups,
                     absl::FunctionRef<void(int64_t, int64_t, int64_t)> fn) {
  constexpr int64_t kChunk = 1 << 14;  // elements: 64 KiB of float32 per list
  struct Chunk {
    int64_t param, begin, end;
  };
  std::vector<Chunk> chunks;
  for (int64_t i = 0; i < n; ++i) {
    if (!Fast(in, n, i, groups) || !OnCpu(in[i])) continue;
    const int64_t numel = in[i].numel();
    for (int64_t b = 0; b < numel; b += kChunk) {
      chunks.push_back({i, b, std::min(numel, b + kChunk)});
    }
  }
  cpu::ParallelFor(static_cast<int64_t>(chunks.size()), kChunk,
                   [&](int64_t first, int64_t last) {
                     for (int64_t c = first; c < last; ++c) {
                       fn(chunks[c].param, chunks[c].begin, chunks[c].end);
                     }
                   });
}

absl::StatusOr<std::vector<Tensor>> WithGrads(const char* op,
                                              absl::Span<const Tensor> in,
                                              int64_t n, int given) {
  if (n < 0 || static_cast<int64_t>(in.size()) % given != 0 ||
      static_cast<int64_t>(in.size()) / given != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " expects ", given, " lists of n=", n,
                     " tensors each, got ", in.size(), " inputs"));
  }
  std::vector<int64_t> have;
  for (int64_t i = 0; i < n; ++i) {
    const AutogradMeta* meta = in[i].autograd();
    if (meta != nullptr && meta->grad.defined()) have.push_back(i);
  }
  std::vector<Tensor> out;
  out.reserve(have.size() * (given + 1));
  for (int64_t i : have) out.push_back(in[i]);
  for (int64_t i : have) out.push_back(in[i].autograd()->grad);
  for (int g = 1; g < given; ++g) {
    for (int64_t i : have) out.push_back(in[g * n + i]);
  }
  return out;
}

}  // namespace optim_step
}  // namespace tensord
