// The plain strided view that kernels take (after ggml's ne/nb). A POD: no
// ownership, no device logic; the runtime guarantees that `data` stays alive
// and that sizes/strides describe memory inside its storage.
#ifndef TENSORD_RUNTIME_CORE_STRIDED_H_
#define TENSORD_RUNTIME_CORE_STRIDED_H_

#include <cstdint>

#include "runtime/core/dtype.h"
#include "runtime/core/shape.h"

namespace tensord {

struct StridedView {
  void* data = nullptr;  // address of element [0, 0, ...]
  DType dtype = DType::kFloat32;
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // in elements, may be 0 (broadcast)

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= sizes[i];
    return n;
  }
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      if (sizes[i] != 1 && strides[i] != expected) return false;
      expected *= sizes[i];
    }
    return true;
  }
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
};

// An opaque execution stream: nullptr for the CPU (synchronous), a
// cudaStream_t for CUDA kernels.
using StreamHandle = void*;

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_STRIDED_H_
