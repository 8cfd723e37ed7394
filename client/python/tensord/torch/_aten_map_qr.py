"""ATen's QR family, least squares, matrix exponential and LDL overloads mapped onto the daemon's
LAPACK rows (``lapack_qr_ops.cc``, ``lapack_matrix_ops.cc``).

The rows are named and shaped as ATen's ops, so the rules pass their arguments through, as
``_aten_map_linalg``'s do: float32/float64 on a CPU daemon; elsewhere (a CUDA daemon: the rows
have no CUDA kernels; other dtypes, where PyTorch raises its own error) a rule declines and
PyTorch's CPU kernel runs (a counted fallback). Gradients are PyTorch's own formulas on the
client (``linalg_qr_backward``, ``householder_product_backward``, matrix_exp's block-matrix
identity, lstsq's through ``pinv``), which call these rows and ordinary ones.

``geqrf`` and ``linalg_lstsq`` have no meta function in PyTorch, so they are handlers that shape
their outputs themselves. ``linalg_lstsq``'s residuals are ATen's: computed for m > n unless the
driver is gelsy, and empty when gelsd/gelss find a matrix of rank < n, which ATen's CPU kernel
decides by reading the rank back; so does this handler (one wait, only for those drivers).
"""

from __future__ import annotations

from typing import Any, Dict

import torch

from . import _transfer
from ._aten_map import c, rule
from ._aten_map_linalg import _native
from ._aten_map_nn import torch_args
from ._data_sized import bind
from ._special import _handles, new_lazy
from ._tensor import TensordTensor, contiguous_strides

aten = torch.ops.aten

_DRIVERS = (None, "gels", "gelsy", "gelsd", "gelss")


@rule(aten.linalg_qr.default)
@torch_args
def _qr(targs: tuple, A: Any, mode: str = "reduced") -> Any:  # noqa: N803
    if not _native(targs[0]) or mode not in ("reduced", "complete", "r"):
        return NotImplemented
    return tuple(c("linalg_qr", [A], mode=str(mode)))


@rule(aten.linalg_householder_product.default)
@torch_args
def _householder_product(targs: tuple, input: Any, tau: Any) -> Any:  # noqa: A002
    if not _native(targs[0], targs[1]) or targs[0].dtype != targs[1].dtype:
        return NotImplemented
    return c("linalg_householder_product", [input, tau])


@rule(aten.ormqr.default)
@torch_args
def _ormqr(targs: tuple, input: Any, input2: Any, input3: Any, left: bool = True,  # noqa: A002
           transpose: bool = False) -> Any:
    if not _native(*targs[:3]) or len({t.dtype for t in targs[:3]}) != 1:
        return NotImplemented
    return c("ormqr", [input, input2, input3], left=bool(left), transpose=bool(transpose))


@rule(aten.linalg_matrix_exp.default)
@torch_args
def _matrix_exp(targs: tuple, A: Any) -> Any:  # noqa: N803
    return c("linalg_matrix_exp", [A]) if _native(targs[0]) else NotImplemented


@rule(aten.linalg_ldl_factor_ex.default)
@torch_args
def _ldl_factor_ex(targs: tuple, A: Any, *, hermitian: bool = False,  # noqa: N803
                   check_errors: bool = False) -> Any:
    if not _native(targs[0]):
        return NotImplemented
    return tuple(c("linalg_ldl_factor_ex", [A], hermitian=bool(hermitian),
                   check_errors=bool(check_errors)))


@rule(aten.linalg_ldl_solve.default)
@torch_args
def _ldl_solve(targs: tuple, LD: Any, pivots: Any, B: Any, *,  # noqa: N803
               hermitian: bool = False) -> Any:
    if (not _native(targs[0], targs[2]) or targs[1].dtype != torch.int32
            or targs[0].dtype != targs[2].dtype):
        return NotImplemented
    return c("linalg_ldl_solve", [LD, pivots, B], hermitian=bool(hermitian))


def _payload(t: TensordTensor) -> Any:
    from ._dispatch import payload
    return payload(t)


def _fresh(p: Any, shape: tuple, dtype: torch.dtype) -> TensordTensor:
    return TensordTensor(p, shape, contiguous_strides(shape), 0, dtype)


@_handles(aten.geqrf.default)
def geqrf(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """``torch.geqrf``: (a, tau) of the daemon's row, shaped here (PyTorch has no meta)."""
    x = bind(func, args, kwargs)["self"]
    if not (isinstance(x, TensordTensor) and _native(x) and x.dim() >= 2):
        return _fall_back(func, args, kwargs)
    a, tau = c("geqrf", [_payload(x)])
    shape = tuple(x.shape)
    return _fresh(a, shape, x.dtype), _fresh(tau, shape[:-2] + (min(shape[-2:]),), x.dtype)


def _lstsq_shapes(A: torch.Tensor, B: torch.Tensor) -> Any:  # noqa: N803
    """(batch, m, n, k, vector) of ATen's lstsq, or None where ATen raises."""
    diff = A.dim() - B.dim()
    if A.dim() < 2 or diff not in (0, 1):
        return None
    m, n = A.shape[-2:]
    rows, k = (B.shape[-1], 1) if diff else (B.shape[-2], B.shape[-1])
    if rows != m:
        return None
    try:
        batch = torch.broadcast_shapes(A.shape[:-2], B.shape[:B.dim() - 2 + diff])
    except RuntimeError:
        return None
    return tuple(batch), m, n, k, bool(diff)


@_handles(aten.linalg_lstsq.default)
def lstsq(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """``torch.linalg.lstsq`` on the daemon's row, with ATen's CPU output shapes."""
    a = bind(func, args, kwargs)
    A, B, driver = a["self"], a["b"], a["driver"]  # noqa: N806
    shapes = _lstsq_shapes(A, B) if isinstance(B, torch.Tensor) else None
    if (shapes is None or driver not in _DRIVERS or A.dtype != B.dtype
            or not all(isinstance(t, TensordTensor) for t in (A, B)) or not _native(A, B)):
        return _fall_back(func, args, kwargs)  # PyTorch's kernel: its value or its error
    batch, m, n, k, vector = shapes
    rcond = a["rcond"]
    sol, res, rank, sv = c("linalg_lstsq", [_payload(A), _payload(B)],
                           rcond=None if rcond is None else float(rcond), driver=driver)
    dt, a_batch = A.dtype, tuple(A.shape[:-2])  # rank, singular values: A's batch (ATen's)
    residuals = m > n and driver not in (None, "gelsy")
    if residuals and driver in ("gelsd", "gelss") and _numel(batch) > 0:
        ranks = _transfer.download(rank, torch.int64)
        residuals = bool((ranks == n).all())
    return (_fresh(sol, batch + ((n,) if vector else (n, k)), dt),
            _fresh(res, batch + (k,), dt) if residuals else _empty(dt),
            _fresh(rank, a_batch, torch.int64) if driver != "gels" else _empty(torch.int64),
            _fresh(sv, a_batch + (min(m, n),), dt) if driver in ("gelsd", "gelss")
            else _empty(dt))


def _numel(batch: tuple) -> int:
    size = 1
    for s in batch:
        size *= s
    return size


def _empty(dtype: torch.dtype) -> TensordTensor:
    return new_lazy((0,), dtype)


def _fall_back(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    from . import _fallback
    return _fallback.run(func, args, kwargs)
