#include "client/tensor.h"

#include <utility>

#include "client/chunking.h"
#include "client/ops.h"
#include "client/tensor_impl.h"

namespace tensord {
inline namespace client {
namespace {

absl::StatusOr<internal::HandleMeta> Meta(
    const std::shared_ptr<internal::TensorImpl>& impl) {
  if (impl == nullptr) {
    return absl::FailedPreconditionError("undefined Tensor");
  }
  if (!impl->error.ok()) return impl->error;
  absl::StatusOr<internal::HandleMeta> meta =
      impl->session->WaitMeta(impl->handle);
  if (!meta.ok()) return meta.status();
  if (!meta->error.ok()) return meta->error;
  return meta;
}

// The operand's session, for uploading a scalar next to it.
std::shared_ptr<internal::Session> SessionOf(const Tensor& t) {
  return t.impl() == nullptr ? nullptr : t.impl()->session;
}

Tensor ScalarTensor(const Tensor& like, const Scalar& s) {
  if (like.impl() != nullptr && !like.impl()->error.ok()) return like;
  return internal::UploadTensor(SessionOf(like), s.data(), ItemSize(s.dtype()),
                                s.dtype(), {}, "", false, Site(),
                                /*wrapped_number=*/true);
}

}  // namespace

const void* Scalar::data() const {
  switch (dtype_) {
    case DType::kBool:
      return &b_;
    case DType::kInt64:
      return &i_;
    default:
      return &f_;
  }
}

Tensor Tensor::FromError(absl::Status error) {
  if (error.ok()) error = absl::InternalError("Tensor::FromError(OkStatus)");
  return Tensor(std::make_shared<internal::TensorImpl>(std::move(error)));
}

Tensor::Tensor(std::shared_ptr<internal::TensorImpl> impl)
    : impl_(std::move(impl)) {}

uint64_t Tensor::handle() const { return impl_ ? impl_->handle : 0; }

absl::StatusOr<std::vector<int64_t>> Tensor::shape() const {
  absl::StatusOr<internal::HandleMeta> meta = Meta(impl_);
  if (!meta.ok()) return meta.status();
  return std::move(meta->shape);
}

absl::StatusOr<DType> Tensor::dtype() const {
  absl::StatusOr<internal::HandleMeta> meta = Meta(impl_);
  if (!meta.ok()) return meta.status();
  return meta->dtype;
}

absl::StatusOr<std::string> Tensor::device() const {
  absl::StatusOr<internal::HandleMeta> meta = Meta(impl_);
  if (!meta.ok()) return meta.status();
  return std::move(meta->device);
}

absl::StatusOr<int64_t> Tensor::numel() const {
  absl::StatusOr<std::vector<int64_t>> dims = shape();
  if (!dims.ok()) return dims.status();
  int64_t n = 1;
  for (int64_t d : *dims) n *= d;
  return n;
}

absl::StatusOr<int64_t> Tensor::dim() const {
  absl::StatusOr<std::vector<int64_t>> dims = shape();
  if (!dims.ok()) return dims.status();
  return static_cast<int64_t>(dims->size());
}

absl::StatusOr<bool> Tensor::requires_grad() const {
  absl::StatusOr<internal::HandleMeta> meta = Meta(impl_);
  if (!meta.ok()) return meta.status();
  return meta->requires_grad;
}

absl::Status Tensor::status() const { return Meta(impl_).status(); }

absl::StatusOr<HostTensor> Tensor::Download(Site site) const {
  if (impl_ == nullptr) {
    return absl::FailedPreconditionError("undefined Tensor");
  }
  if (!impl_->error.ok()) return impl_->error;
  return impl_->session->Download(impl_->handle, site.ToString());
}

std::optional<int64_t> Tensor::DirectNumel(DType dtype) const {
  if (impl_ == nullptr || !impl_->error.ok()) return std::nullopt;
  std::optional<internal::HandleMeta> meta =
      impl_->session->KnownMeta(impl_->handle);
  if (!meta.has_value() || !meta->error.ok() || meta->is_none ||
      meta->dtype != dtype) {
    return std::nullopt;
  }
  absl::StatusOr<uint64_t> bytes = TensorBytes(meta->dtype, meta->shape);
  if (!bytes.ok() || *bytes < (uint64_t{1} << 20)) return std::nullopt;
  return static_cast<int64_t>(*bytes / ItemSize(dtype));
}

absl::StatusOr<size_t> Tensor::DownloadInto(void* dst, size_t capacity,
                                            Site site) const {
  if (impl_ == nullptr) {
    return absl::FailedPreconditionError("undefined Tensor");
  }
  if (!impl_->error.ok()) return impl_->error;
  if (dst == nullptr && capacity > 0) {
    return absl::InvalidArgumentError("DownloadInto: null destination");
  }
  internal::DownloadTarget target{static_cast<char*>(dst), capacity};
  // A one-byte scratch keeps the assembler off HostTensor::bytes even for a
  // zero-capacity call (an empty tensor fits; anything else is an error).
  char scratch = 0;
  if (target.data == nullptr) target.data = &scratch;
  absl::StatusOr<HostTensor> host =
      impl_->session->Download(impl_->handle, site.ToString(), target);
  if (!host.ok()) return host.status();
  absl::StatusOr<uint64_t> bytes = TensorBytes(host->dtype, host->shape);
  if (!bytes.ok()) return bytes.status();
  return static_cast<size_t>(*bytes);
}

Tensor Tensor::matmul(const Tensor& other, Site site) const {
  return tensord::matmul(*this, other, site);
}
Tensor Tensor::sum(std::vector<int64_t> dims, bool keepdim, Site site) const {
  return tensord::sum(*this, std::move(dims), keepdim, site);
}
Tensor Tensor::mean(std::vector<int64_t> dims, bool keepdim, Site site) const {
  return tensord::mean(*this, std::move(dims), keepdim, site);
}
Tensor Tensor::relu(Site site) const { return tensord::relu(*this, site); }
Tensor Tensor::neg(Site site) const { return tensord::neg(*this, site); }
Tensor Tensor::reshape(std::vector<int64_t> shape, Site site) const {
  return tensord::reshape(*this, std::move(shape), site);
}
Tensor Tensor::transpose(int64_t dim0, int64_t dim1, Site site) const {
  return tensord::transpose(*this, dim0, dim1, site);
}

// Operators have no call site of their own (C++ gives them no default
// arguments); errors name the op only.
Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b, 1.0, Site());
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b, 1.0, Site());
}
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b, Site()); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b, Site()); }
Tensor operator+(const Tensor& a, const Scalar& b) {
  return a + ScalarTensor(a, b);
}
Tensor operator-(const Tensor& a, const Scalar& b) {
  return a - ScalarTensor(a, b);
}
Tensor operator*(const Tensor& a, const Scalar& b) {
  return a * ScalarTensor(a, b);
}
Tensor operator/(const Tensor& a, const Scalar& b) {
  return a / ScalarTensor(a, b);
}
Tensor operator+(const Scalar& a, const Tensor& b) {
  return ScalarTensor(b, a) + b;
}
Tensor operator-(const Scalar& a, const Tensor& b) {
  return ScalarTensor(b, a) - b;
}
Tensor operator*(const Scalar& a, const Tensor& b) {
  return ScalarTensor(b, a) * b;
}
Tensor operator/(const Scalar& a, const Tensor& b) {
  return ScalarTensor(b, a) / b;
}
Tensor operator-(const Tensor& a) { return neg(a, Site()); }

}  // namespace client
}  // namespace tensord
