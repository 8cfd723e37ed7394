// LAPACK-backed rows of the Cholesky factor, the symmetric eigendecomposition
// and the SVD, named and shaped as ATen's ops (linalg_cholesky_ex,
// _linalg_eigh, _linalg_svd); the LU family and the shared conventions are
// in lapack_ops.cc. Kernels in kernels/cpu/linalg.h; CPU only, no native
// gradients (the PyTorch device runs PyTorch's autograd on the client).
#include <cctype>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/linalg.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/lapack_rows.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using namespace lapack_rows;  // NOLINT: the rows' shared helpers
using Specs = absl::StatusOr<std::vector<TensorSpec>>;

// linalg_cholesky_ex(A, upper, check_errors) -> (L, info).
absl::Status CpuCholeskyEx(absl::Span<const Tensor> in,
                           absl::Span<const Tensor> out, const Attrs& attrs,
                           const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  TD_RETURN_IF_ERROR(cpu::Cholesky(a.view(), attrs.Bool("upper"), out[0].view(),
                                   out[1].view()));
  if (!attrs.Bool("check_errors")) return absl::OkStatus();
  return CheckInfo(out[1],
                   "linalg.cholesky: the factorization could not be completed "
                   "because the input is not positive-definite (the leading "
                   "minor of order ");
}

Specs InferCholeskyEx(absl::Span<const Tensor> in, const Attrs&,
                      const OpContext&) {
  const Tensor& a = in[0];
  TD_RETURN_IF_ERROR(RequireMatrices(a, "linalg.cholesky", true));
  return std::vector<TensorSpec>{{a.dtype(), a.shape(), a.device()},
                                 {DType::kInt32, Batch(a), a.device()}};
}

// "L"/"U" (either case) of _linalg_eigh's UPLO; true for upper.
absl::StatusOr<bool> Upper(const Attrs& attrs) {
  const std::string& s = attrs.String("UPLO");
  if (s.size() == 1 &&
      (std::toupper(s[0]) == 'L' || std::toupper(s[0]) == 'U')) {
    return std::toupper(s[0]) == 'U';
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "linalg.eigh: UPLO should be 'L' or 'U', but got '", s, "'"));
}

// _linalg_eigh(A, UPLO, compute_v) -> (eigenvalues, eigenvectors); without
// compute_v eigenvectors is empty ([0]), as ATen's.
Specs InferEigh(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  const Tensor& a = in[0];
  TD_RETURN_IF_ERROR(RequireMatrices(a, "linalg.eigh", true));
  TD_RETURN_IF_ERROR(Upper(attrs).status());
  return std::vector<TensorSpec>{
      {a.dtype(), With(Batch(a), {Rows(a)}), a.device()},
      {a.dtype(), attrs.Bool("compute_v") ? a.shape() : Shape{0}, a.device()}};
}

absl::Status CpuEigh(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(bool upper, Upper(attrs));
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  StridedView vectors = out[1].view();
  return cpu::Eigh(a.view(), upper, out[0].view(),
                   attrs.Bool("compute_v") ? &vectors : nullptr);
}

// _linalg_svd(A, full_matrices, compute_uv) -> (U, S, Vh); without
// compute_uv U and Vh are empty ([0]), as ATen's.
Specs InferSvd(absl::Span<const Tensor> in, const Attrs& attrs,
               const OpContext&) {
  const Tensor& a = in[0];
  TD_RETURN_IF_ERROR(RequireMatrices(a, "linalg.svd", false));
  const int64_t m = Rows(a), n = Cols(a), k = std::min(m, n);
  const bool full = attrs.Bool("full_matrices"), uv = attrs.Bool("compute_uv");
  const Shape batch = Batch(a);
  return std::vector<TensorSpec>{
      {a.dtype(), uv ? With(batch, {m, full ? m : k}) : Shape{0}, a.device()},
      {a.dtype(), With(batch, {k}), a.device()},
      {a.dtype(), uv ? With(batch, {full ? n : k, n}) : Shape{0}, a.device()}};
}

absl::Status CpuSvd(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                    const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  const bool uv = attrs.Bool("compute_uv");
  StridedView u = out[0].view(), vh = out[2].view();
  return cpu::Svd(a.view(), attrs.Bool("full_matrices"), uv ? &u : nullptr,
                  out[1].view(), uv ? &vh : nullptr);
}

}  // namespace

std::vector<OpDef> LapackSpectralOps() {
  std::vector<OpDef> ops;
  ops.push_back(Row(
      "linalg_cholesky_ex", 1, 2,
      {Flag("upper", false), Flag("check_errors", false)},
      "(L, info): the Cholesky factor of A from its lower triangle (U = L^H "
      "from the upper with upper); info k > 0: minor k not positive "
      "definite.",
      InferCholeskyEx, CpuCholeskyEx,
      {Example({{3, 3}}), Example({{2, 3, 3}}, {{"upper", true}})}));
  ops.push_back(Row(
      "_linalg_eigh", 1, 2,
      {Optional("UPLO", AttrType::kString, std::string("L")),
       Flag("compute_v", true)},
      "(eigenvalues ascending, eigenvectors as columns) of symmetric A read "
      "from its lower (UPLO='L') or upper triangle (LAPACK syevd).",
      InferEigh, CpuEigh,
      {Example({{3, 3}}), Example({{2, 4, 4}}, {{"UPLO", std::string("U")}}),
       Example({{3, 3}}, {{"compute_v", false}})}));
  ops.push_back(
      Row("_linalg_svd", 1, 3,
          {Flag("full_matrices", false), Flag("compute_uv", true)},
          "(U, S, Vh) with A = U diag(S) Vh, S descending (LAPACK gesdd); "
          "without compute_uv U and Vh are empty.",
          InferSvd, CpuSvd,
          {Example({{3, 5}}), Example({{2, 5, 3}}, {{"full_matrices", true}}),
           Example({{4, 3}}, {{"compute_uv", false}})}));
  return ops;
}

}  // namespace tensord
