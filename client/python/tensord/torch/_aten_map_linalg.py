"""ATen's linear algebra overloads mapped onto the daemon's LAPACK rows (``lapack_ops.cc``,
``triangular_solve`` in ``lapack_matrix_ops.cc``).

The rows are named and shaped as ATen's ops (info tensors, int32 1-based pivots, ascending
eigenvalues, ``U``/``S``/``Vh``), so each rule passes its arguments through. They run on the
CPU daemon in float32 and float64; on a CUDA daemon, and in other dtypes (where PyTorch raises
its own error), a rule declines and PyTorch's CPU kernel runs (a counted fallback). No gradient
rows are needed: the device runs PyTorch's autograd on the client, whose formulas call these
ops and ordinary ones.

Handlers written as other ops on the device (Note: they run below autograd, which PyTorch's
formulas for these ops handle above them):

- ``linalg_pinv.atol_rtol_tensor`` (what ``torch.linalg.pinv`` reaches), as ATen's: an SVD (an
  eigendecomposition with ``hermitian``) with the singular values at or below
  ``max(atol, rtol * largest)`` dropped.
- ``lu_unpack`` and ``linalg_lu``: L and U as triangles of the LU; P from the pivots, read back.
- ``cholesky_solve`` and ``cholesky_inverse``: two triangular solves.
- ``_linalg_check_errors``: PyTorch's own check on the info tensor, read back.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import torch

from ._aten_map import c, rule, torch_args
from ._aten_map_nn import _fused_rows
from ._special import _handles

aten = torch.ops.aten

_DTYPES = (torch.float32, torch.float64)


def _native(*targs: Any) -> bool:
    """Whether the daemon's rows take these PyTorch arguments: its tensors float32/float64
    and the daemon on the CPU (the LAPACK rows have no CUDA kernels)."""
    return all(t.dtype in _DTYPES for t in targs if isinstance(t, torch.Tensor)) and _fused_rows()


@rule(aten.linalg_lu_factor_ex.default)
@torch_args
def _lu_factor_ex(targs: tuple, A: Any, pivot: bool = True,  # noqa: N803
                  check_errors: bool = False) -> Any:
    if not pivot or not _native(targs[0]):
        return NotImplemented
    return tuple(c("linalg_lu_factor_ex", [A], check_errors=bool(check_errors)))


@rule(aten.linalg_lu_solve.default)
@torch_args
def _lu_solve(targs: tuple, LU: Any, pivots: Any, B: Any, left: bool = True,  # noqa: N803
              adjoint: bool = False) -> Any:
    if not _native(targs[0], targs[2]) or targs[1].dtype != torch.int32:
        return NotImplemented
    return c("linalg_lu_solve", [LU, pivots, B], left=bool(left), adjoint=bool(adjoint))


@rule(aten.linalg_solve_triangular.default)
@torch_args
def _solve_triangular(targs: tuple, A: Any, B: Any, upper: bool, left: bool = True,  # noqa: N803
                      unitriangular: bool = False) -> Any:
    if not _native(targs[0], targs[1]) or targs[0].dtype != targs[1].dtype:
        return NotImplemented
    return c("linalg_solve_triangular", [A, B], upper=bool(upper), left=bool(left),
             unitriangular=bool(unitriangular))


@rule(aten.triangular_solve.default)
@torch_args
def _triangular_solve(targs: tuple, self: Any, A: Any, upper: bool = True,  # noqa: N803
                      transpose: bool = False, unitriangular: bool = False) -> Any:
    if not _native(targs[0], targs[1]) or targs[0].dtype != targs[1].dtype:
        return NotImplemented
    return tuple(c("triangular_solve", [self, A], upper=bool(upper), transpose=bool(transpose),
                   unitriangular=bool(unitriangular)))


@rule(aten._linalg_solve_ex.default)
@torch_args
def _solve_ex(targs: tuple, A: Any, B: Any, left: bool = True,  # noqa: N803
              check_errors: bool = False) -> Any:
    if not _native(targs[0], targs[1]) or targs[0].dtype != targs[1].dtype:
        return NotImplemented
    return tuple(c("_linalg_solve_ex", [A, B], left=bool(left), check_errors=bool(check_errors)))


@rule(aten.linalg_inv_ex.default)
@torch_args
def _inv_ex(targs: tuple, A: Any, check_errors: bool = False) -> Any:  # noqa: N803
    if not _native(targs[0]):
        return NotImplemented
    return tuple(c("linalg_inv_ex", [A], check_errors=bool(check_errors)))


@rule(aten.linalg_cholesky_ex.default)
@torch_args
def _cholesky_ex(targs: tuple, A: Any, upper: bool = False,  # noqa: N803
                 check_errors: bool = False) -> Any:
    if not _native(targs[0]):
        return NotImplemented
    return tuple(c("linalg_cholesky_ex", [A], upper=bool(upper), check_errors=bool(check_errors)))


@rule(aten._linalg_slogdet.default)
@torch_args
def _slogdet(targs: tuple, A: Any) -> Any:  # noqa: N803
    return tuple(c("_linalg_slogdet", [A])) if _native(targs[0]) else NotImplemented


@rule(aten._linalg_det.default)
@torch_args
def _det(targs: tuple, A: Any) -> Any:  # noqa: N803
    return tuple(c("_linalg_det", [A])) if _native(targs[0]) else NotImplemented


@rule(aten._linalg_eigh.default)
@torch_args
def _eigh(targs: tuple, A: Any, UPLO: str = "L", compute_v: bool = True) -> Any:  # noqa: N803
    if not _native(targs[0]):
        return NotImplemented
    return tuple(c("_linalg_eigh", [A], UPLO=str(UPLO), compute_v=bool(compute_v)))


@rule(aten._linalg_svd.default)
@torch_args
def _svd(targs: tuple, A: Any, full_matrices: bool = False, compute_uv: bool = True,  # noqa: N803
         driver: Optional[str] = None) -> Any:
    if driver is not None or not _native(targs[0]):
        return NotImplemented  # driver= is CUDA-only: PyTorch's CPU kernel raises the error
    return tuple(c("_linalg_svd", [A], full_matrices=bool(full_matrices),
                   compute_uv=bool(compute_uv)))


def _pinv_tolerances(a: torch.Tensor, atol: Optional[torch.Tensor],
                     rtol: Optional[torch.Tensor]) -> tuple:
    """ATen's ``get_atol_rtol``: atol 0 unless given; rtol ``eps * max(m, n)`` unless given,
    and 0 where a positive atol was given without an rtol."""
    zero = torch.zeros((), dtype=a.dtype, device=a.device)
    # ATen's float overloads may make CPU scalars of them: uploaded, as a's dtype.
    atol_t = zero if atol is None else atol.to(device=a.device, dtype=a.dtype)
    if rtol is not None:
        return atol_t, rtol.to(device=a.device, dtype=a.dtype)
    default = torch.full((), torch.finfo(a.dtype).eps * max(a.shape[-1], a.shape[-2]),
                         dtype=a.dtype, device=a.device)
    if atol is None:
        return atol_t, default
    return atol_t, torch.where(atol_t > 0, zero, default)


@_handles(aten.linalg_pinv.atol_rtol_tensor)
def pinv(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    names = ("self", "atol", "rtol", "hermitian")
    a = dict(zip(names, args), **kwargs)
    x, atol, rtol = a["self"], a.get("atol"), a.get("rtol")
    hermitian = bool(a.get("hermitian", False))
    tols = [t for t in (atol, rtol) if isinstance(t, torch.Tensor)]
    if not (_native(x) and x.dim() >= 2 and
            all(t.device == x.device or (t.device.type == "cpu" and t.dim() == 0)
                for t in tols)):
        from . import _fallback
        return _fallback.run(func, args, kwargs)
    if x.numel() == 0:  # ATen's value for empty matrices: zeros of the transposed shape
        return torch.zeros(*x.shape[:-2], x.shape[-1], x.shape[-2], dtype=x.dtype,
                           device=x.device)
    atol_t, rtol_t = _pinv_tolerances(x, atol, rtol)
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    if not hermitian:
        U, S, Vh = torch.linalg.svd(x, full_matrices=False)  # noqa: N806
        tol = torch.maximum(atol_t.unsqueeze(-1), rtol_t.unsqueeze(-1) * S.narrow(-1, 0, 1))
        S_inv = torch.where(S > tol, S.reciprocal(), zero)  # noqa: N806
        return torch.matmul(Vh.mT * S_inv.unsqueeze(-2), U.mT)
    S, U = torch.linalg.eigh(x)  # noqa: N806
    tol = torch.maximum(atol_t.unsqueeze(-1), rtol_t.unsqueeze(-1) * S.abs().amax(-1, True))
    S_inv = torch.where(S.abs() > tol, S.reciprocal(), zero)  # noqa: N806
    return torch.matmul(U * S_inv.unsqueeze(-2), U.mT)


@_handles(aten._linalg_check_errors.default)
def check_errors(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """What ``torch.linalg.inv``/``cholesky``/``solve``/``lu_factor`` call after their ``_ex``
    op: PyTorch's own check on the info tensor read back (a copy, as PyTorch's CPU kernel
    reads it too), so its errors are PyTorch's word for word."""
    names = ("info", "api_name", "is_matrix")
    a = dict(zip(names, args), **kwargs)
    info = a["info"]
    info = info.cpu() if isinstance(info, torch.Tensor) else info
    func(info, a["api_name"], is_matrix=a["is_matrix"])
    return None


@_handles(aten.lu_unpack.default)
def lu_unpack(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """(P, L, U) of ``linalg.lu_factor``'s output (what its and ``lu_solve``'s gradients call):
    L and U are triangles of LU on the device; P comes from the pivots read back (ATen's CPU
    kernel reads them too: the row swaps are sequential) and is uploaded."""
    names = ("LU_data", "LU_pivots", "unpack_data", "unpack_pivots")
    a = dict(zip(names, args), **kwargs)
    lu, piv = a["LU_data"], a["LU_pivots"]
    unpack_data, unpack_pivots = a.get("unpack_data", True), a.get("unpack_pivots", True)
    if not (_native(lu) and lu.dim() >= 2 and piv.dtype == torch.int32):
        from . import _fallback
        return _fallback.run(func, args, kwargs)
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    empty = torch.empty(0, dtype=lu.dtype, device=lu.device)
    L = U = empty  # noqa: N806
    if unpack_data:
        eye = torch.eye(m, k, dtype=lu.dtype).to(lu.device)  # (eye on the device: eye.out)
        L = lu[..., :, :k].tril(-1) + eye  # noqa: N806
        U = lu[..., :k, :].triu()  # noqa: N806
    P = empty  # noqa: N806
    if unpack_pivots:
        pv = piv.cpu().long() - 1
        perm = torch.arange(m).expand(*pv.shape[:-1], m).clone()
        for i in range(min(k, pv.shape[-1])):  # LAPACK's swaps, in order
            j = pv[..., i].unsqueeze(-1)
            row_i, row_j = perm[..., i].clone(), perm.gather(-1, j).squeeze(-1)
            perm[..., i] = row_j
            perm.scatter_(-1, j, row_i.unsqueeze(-1))
        P = torch.eye(m, dtype=lu.dtype)[perm].mT.contiguous().to(lu.device)  # noqa: N806
    return P, L, U


@_handles(aten.linalg_lu.default)
def linalg_lu(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """``torch.linalg.lu``: (P, L, U) as ``lu_unpack`` of ``linalg_lu_factor_ex``, as ATen's."""
    a = dict(zip(("A", "pivot"), args), **kwargs)
    if not (a.get("pivot", True) and _native(a["A"]) and a["A"].dim() >= 2):
        from . import _fallback
        return _fallback.run(func, args, kwargs)
    lu, piv, _ = torch.linalg.lu_factor_ex(a["A"])
    return lu_unpack(aten.lu_unpack.default, (lu, piv), {})


def _cholesky_solve(b: torch.Tensor, factor: torch.Tensor, upper: bool) -> torch.Tensor:
    """A^-1 B for A = L L^T (U^T U with ``upper``): two triangular solves on the device."""
    lower = factor.mT if upper else factor
    y = torch.linalg.solve_triangular(lower, b, upper=False)
    return torch.linalg.solve_triangular(lower.mT, y, upper=True)


@_handles(aten.cholesky_solve.default, aten.cholesky_inverse.default)
def cholesky_solve(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """``cholesky_solve(B, L, upper)`` and ``cholesky_inverse(L, upper)`` (ATen's potrs/potri)
    as triangular solves; the inverse solves for the identity, uploaded."""
    inverse = func is aten.cholesky_inverse.default
    names = ("self", "upper") if inverse else ("self", "input2", "upper")
    a = dict(zip(names, args), **kwargs)
    factor = a["self"] if inverse else a["input2"]
    tensors = [factor] if inverse else [factor, a["self"]]
    if not (_native(*tensors) and all(t.dim() >= 2 and t.dtype == factor.dtype for t in tensors)):
        from . import _fallback
        return _fallback.run(func, args, kwargs)
    upper = bool(a.get("upper", False))
    if inverse:
        n = factor.shape[-1]
        b = torch.eye(n, dtype=factor.dtype).to(factor.device).expand(factor.shape)
        return _cholesky_solve(b, factor, upper)
    return _cholesky_solve(a["self"], factor, upper)
