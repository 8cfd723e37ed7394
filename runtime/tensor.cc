#include "runtime/tensor.h"

#include <utility>

#include "runtime/core/status_macros.h"

namespace tensord {

absl::StatusOr<std::shared_ptr<Storage>> Storage::Allocate(
    Device* device, size_t bytes, const AllocContext& ctx) {
  TD_ASSIGN_OR_RETURN(void* data, device->allocator()->Allocate(bytes, ctx));
  return std::make_shared<Storage>(Key(), device, data, bytes, ctx.session,
                                   ctx.stream);
}

Storage::~Storage() { device_->allocator()->Free(data_); }

absl::StatusOr<Tensor> Tensor::Empty(Device* device, DType dtype,
                                     const Shape& shape,
                                     const AllocContext& ctx) {
  TD_RETURN_IF_ERROR(CheckShape(shape, ItemSize(dtype)));
  const size_t bytes = NumElements(shape) * ItemSize(dtype);
  TD_ASSIGN_OR_RETURN(auto storage, Storage::Allocate(device, bytes, ctx));
  return Tensor(std::move(storage), dtype, shape, ContiguousStrides(shape), 0);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape,
               Strides strides, int64_t offset)
    : storage_(std::move(storage)),
      dtype_(dtype),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset) {}

void* Tensor::data() const {
  return static_cast<char*>(storage_->data()) + offset_ * ItemSize(dtype_);
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

StridedView Tensor::view() const {
  StridedView v;
  v.data = data();
  v.dtype = dtype_;
  v.ndim = ndim();
  for (int i = 0; i < v.ndim; ++i) {
    v.sizes[i] = shape_[i];
    v.strides[i] = strides_[i];
  }
  return v;
}

StridedView Tensor::BroadcastView(const Shape& shape) const {
  StridedView v;
  v.data = data();
  v.dtype = dtype_;
  v.ndim = static_cast<int>(shape.size());
  const int lead = v.ndim - ndim();
  for (int i = 0; i < v.ndim; ++i) {
    v.sizes[i] = shape[i];
    const int src = i - lead;
    v.strides[i] = (src < 0 || shape_[src] == 1) ? 0 : strides_[src];
  }
  return v;
}

Tensor Tensor::AsStrided(Shape shape, Strides strides, int64_t offset) const {
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset);
}

AutogradMeta& Tensor::EnsureAutograd() {
  if (autograd_ == nullptr) autograd_ = std::make_shared<AutogradMeta>();
  return *autograd_;
}

Tensor Tensor::Detached() const {
  return Tensor(storage_, dtype_, shape_, strides_, offset_);
}

}  // namespace tensord
