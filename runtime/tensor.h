// Storage owns bytes on a device; Tensor is a strided view of a Storage.
//
// Several tensors (views) share one Storage through shared_ptr; the bytes go
// back to the device allocator when the last view is destroyed. A Tensor is
// a small value type: copying it makes another view of the same storage.
// Not thread-safe by itself: a session's tensors are used by its executor.
//
// Note [Autograd meta]: a Tensor may carry a shared AutogradMeta
// (requires_grad, grad, grad_fn, output_nr). Copies of a Tensor are the same
// logical tensor and share it; views made with AsStrided (and Detached) are
// new tensors without one. runtime/autograd owns its meaning.
#ifndef TENSORD_RUNTIME_TENSOR_H_
#define TENSORD_RUNTIME_TENSOR_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "runtime/core/dtype.h"
#include "runtime/core/shape.h"
#include "runtime/core/strided.h"
#include "runtime/device.h"

namespace tensord {

class Node;  // a graph node (runtime/autograd/node.h)
struct AutogradMeta;

class Storage {
 private:
  // Only Allocate makes a Storage (with its shared_ptr control block in the
  // same heap block: one malloc per tensor, not two).
  struct Key {
    explicit Key() = default;
  };

 public:
  // Allocates `bytes` on `device` for `ctx.session`; RESOURCE_EXHAUSTED from
  // the allocator passes through.
  static absl::StatusOr<std::shared_ptr<Storage>> Allocate(
      Device* device, size_t bytes, const AllocContext& ctx);
  Storage(Key, Device* device, void* data, size_t nbytes, uint64_t session,
          StreamHandle stream)
      : device_(device),
        data_(data),
        nbytes_(nbytes),
        session_(session),
        stream_(stream) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device* device() const { return device_; }
  uint64_t session() const { return session_; }
  // The stream the bytes were allocated for (the allocator reuses them there
  // first; Note [Cross-stream inputs] in dispatch.cc).
  StreamHandle stream() const { return stream_; }

  // Bumped by every in-place write; autograd checks it (Note [Versions]).
  uint64_t version() const { return version_; }
  void BumpVersion() { ++version_; }

 private:
  Device* device_;
  void* data_;
  size_t nbytes_;
  uint64_t session_;
  StreamHandle stream_;
  uint64_t version_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  // A new contiguous tensor (uninitialised memory).
  static absl::StatusOr<Tensor> Empty(Device* device, DType dtype,
                                      const Shape& shape,
                                      const AllocContext& ctx);
  // A view of `storage` (no copy). The caller guarantees the view fits.
  Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape,
         Strides strides, int64_t offset);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t offset() const { return offset_; }  // in elements
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return NumElements(shape_); }
  size_t nbytes() const { return numel() * ItemSize(dtype_); }
  Device* device() const { return storage_->device(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  void* data() const;  // address of the first element
  bool is_contiguous() const;

  // The POD view kernels take.
  StridedView view() const;
  // This tensor seen with `shape` (broadcasting: stride 0 on expanded dims).
  // The caller has checked that the shapes broadcast.
  StridedView BroadcastView(const Shape& shape) const;
  // Another view of the same storage.
  Tensor AsStrided(Shape shape, Strides strides, int64_t offset) const;

  // Autograd (Note [Autograd meta]). autograd() may be null: a tensor that
  // does not require grad and has no .grad.
  AutogradMeta* autograd() const { return autograd_.get(); }
  const std::shared_ptr<AutogradMeta>& autograd_ptr() const {
    return autograd_;
  }
  // Creates the meta if missing (on this object: copies made later share).
  AutogradMeta& EnsureAutograd();
  void set_autograd(std::shared_ptr<AutogradMeta> meta) {
    autograd_ = std::move(meta);
  }
  bool requires_grad() const;
  const std::shared_ptr<Node>& grad_fn() const;
  bool is_leaf() const { return grad_fn() == nullptr; }
  // The same view of the same storage as a new tensor with no autograd meta.
  Tensor Detached() const;

  // Note [Wrapped numbers]: a client's plain number (a Python float, int or
  // bool; the C++ client's Scalar), uploaded as a 0-dim tensor of full width
  // (float64 for floats) so that its value is exact. Type promotion ranks it
  // below 0-dim tensors and counts a floating one as the default float type
  // (ResultType), as PyTorch does with its wrapped numbers: float64 x * 0.1
  // computes with the double 0.1, and int64 x * 0.5 is still float32.
  bool is_wrapped_number() const { return wrapped_number_; }
  void set_wrapped_number(bool wrapped) { wrapped_number_ = wrapped; }

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  Strides strides_;
  int64_t offset_ = 0;
  std::shared_ptr<AutogradMeta> autograd_;
  bool wrapped_number_ = false;
};

struct AutogradMeta {
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // null: a leaf
  int output_nr = 0;              // which output of grad_fn this tensor is
  Tensor grad;                    // undefined: None
  // A leaf's AccumulateGrad node while some graph uses it (weak: the graph
  // owns it, the leaf does not).
  std::weak_ptr<Node> grad_accumulator;
  // The output of a view op recorded in the graph: in-place writes to it
  // are refused (tensord does not rebase the base's history).
  bool is_view = false;
};

inline bool Tensor::requires_grad() const {
  return autograd_ != nullptr && autograd_->requires_grad;
}
inline const std::shared_ptr<Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<Node> kNone;
  return autograd_ != nullptr ? autograd_->grad_fn : kNone;
}

}  // namespace tensord

#endif  // TENSORD_RUNTIME_TENSOR_H_
