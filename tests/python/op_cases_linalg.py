"""The LAPACK rows' reference cases of op_cases.py (runtime/ops/lapack_ops.cc): named and
shaped as ATen's ops, so the references are ATen's own. Values where PyTorch's are unique (LU,
pivots, info, solutions, inverses, Cholesky factors, determinants, eigenvalues, singular
values); eigen- and singular vectors up to sign (compared in absolute value: the inputs have
distinct eigen/singular values). The rows are CPU-only (KnownCpuOnly): cuda:0 skips them."""

from __future__ import annotations

from typing import Any, List

import numpy as np
import torch

from op_case_inputs import NC, Case, R
from op_cases_attention import CPU_ONLY as ATTENTION_CPU_ONLY
from op_cases_nn import CPU_ONLY as NN_CPU_ONLY
from op_cases_nn_rows import CPU_ONLY as NN_ROWS_CPU_ONLY
from op_cases_qr import CPU_ONLY as QR_CPU_ONLY
from op_cases_resample import CPU_ONLY as RESAMPLE_CPU_ONLY

F64 = torch.float64
aten = torch.ops.aten


def _square(*shape: int, dtype: torch.dtype = F64, seed: int = 0) -> torch.Tensor:
    """Well conditioned: R plus 3 on the diagonal."""
    a = R(*shape, dtype=F64, seed=seed)
    n = min(shape[-2:])
    a[..., :n, :n] += 3 * torch.eye(n, dtype=F64)
    return a.to(dtype)


def _spd(n: int, batch: tuple = (), dtype: torch.dtype = F64) -> torch.Tensor:
    m = R(*batch, n, n, dtype=F64, seed=3)
    return (m @ m.mT + n * torch.eye(n, dtype=F64)).to(dtype)


def _np(t: Any) -> np.ndarray:
    return t.numpy() if hasattr(t, "numpy") else np.asarray(t)


def _up_to_sign(vector_outputs: tuple, k_cols: dict = None) -> Any:
    """A check comparing outputs by value, except those in ``vector_outputs`` (by absolute
    value, and for an SVD's full U / Vh only their first k columns / rows)."""
    def check(got: Any, want: Any) -> None:
        assert isinstance(got, tuple) and len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            g, w = _np(g), w.numpy()
            assert g.shape == w.shape, (i, g.shape, w.shape)
            rtol, atol = (1e-4, 1e-5) if w.dtype == np.float32 else (1e-9, 1e-10)
            if i in vector_outputs:
                g, w = np.abs(g), np.abs(w)
                k = (k_cols or {}).get(i)
                if k is not None and g.ndim >= 2:
                    g, w = (g[..., :k], w[..., :k]) if i == 0 else (g[..., :k, :], w[..., :k, :])
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return check


def _solution_check(got: Any, want: Any) -> None:
    """_linalg_solve_ex's result and info by value; its LU and pivots by shape only: which of A
    and A^T the solve factors changed between PyTorch releases (1.13, the reference here,
    factors A^T of a contiguous A; 2.15 and the daemon factor A itself)."""
    assert isinstance(got, tuple) and len(got) == len(want) == 4
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = _np(g), w.numpy()
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape)
        if i in (0, 3):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)


def _svd_check(shape: tuple) -> Any:
    k = min(shape[-2:])
    return _up_to_sign((0, 2), {0: k, 2: k})


def linalg_cases() -> List[Case]:
    a4 = _square(4, 4)
    lu, piv = torch.linalg.lu_factor(_square(2, 4, 4))
    c = [
        Case("linalg_lu_factor_ex", [a4], ref=torch.linalg.lu_factor_ex),
        Case("linalg_lu_factor_ex", [_square(2, 3, 5, dtype=torch.float32)],
             ref=torch.linalg.lu_factor_ex, rtol=1e-4),
        Case("linalg_lu_factor_ex", [NC(_square(5, 3))], ref=torch.linalg.lu_factor_ex),
        Case("linalg_lu_solve", [lu, piv, R(2, 4, 3, dtype=F64)], ref=torch.linalg.lu_solve),
        Case("linalg_lu_solve", [lu, piv, R(3, 2, 2, 4, dtype=F64)],
             {"left": False, "adjoint": True}, ref=torch.linalg.lu_solve),
        Case("linalg_lu_solve", [lu, piv, NC(R(4, 5, dtype=F64))], {"adjoint": True},
             ref=torch.linalg.lu_solve),
        Case("linalg_solve_triangular", [_square(2, 4, 4), R(4, 3, dtype=F64)], {"upper": True},
             ref=torch.linalg.solve_triangular),
        Case("linalg_solve_triangular", [NC(_square(3, 3)), R(2, 5, 3, dtype=F64)],
             {"upper": False, "left": False, "unitriangular": True},
             ref=torch.linalg.solve_triangular),
        Case("linalg_solve_triangular", [_square(3, 3, dtype=torch.float32),
                                         R(3, 2, dtype=torch.float32)], {"upper": False},
             ref=torch.linalg.solve_triangular, rtol=1e-4),
        # triangular_solve(B, A): both outputs (the solution, A cloned over the batch) and the
        # gradients of both inputs (ATen's triangular_solve_backward).
        Case("triangular_solve", [R(4, 3, dtype=F64), _square(4, 4)],
             ref=torch.triangular_solve),
        Case("triangular_solve", [R(2, 3, 2, dtype=F64), NC(_square(3, 3))],
             {"upper": False, "transpose": True}, ref=torch.triangular_solve),
        Case("triangular_solve", [NC(R(4, 2, dtype=F64)), _square(2, 1, 4, 4)],
             {"transpose": True, "unitriangular": True}, ref=torch.triangular_solve),
        Case("triangular_solve", [R(3, 1, 3, 1, dtype=F64), _square(2, 3, 3)],
             {"upper": False, "unitriangular": True}, ref=torch.triangular_solve),
        Case("triangular_solve", [R(3, 2, dtype=torch.float32), _square(3, 3, dtype=torch.float32)],
             ref=torch.triangular_solve, rtol=1e-4),
        Case("triangular_solve", [R(3, 0, dtype=F64), _square(3, 3)], ref=torch.triangular_solve),
        Case("_linalg_solve_ex", [_square(2, 4, 4), R(2, 4, 3, dtype=F64)],
             ref=aten._linalg_solve_ex, check=_solution_check),
        Case("_linalg_solve_ex", [_square(2, 4, 4), R(4, dtype=F64)], ref=aten._linalg_solve_ex,
             check=_solution_check),
        Case("_linalg_solve_ex", [_square(3, 3), R(2, 5, 3, dtype=F64)], {"left": False},
             ref=aten._linalg_solve_ex, check=_solution_check),
        Case("linalg_inv_ex", [_square(2, 5, 5)], ref=torch.linalg.inv_ex),
        Case("linalg_inv_ex", [_square(3, 3, dtype=torch.float32)], ref=torch.linalg.inv_ex,
             rtol=1e-4),
        Case("linalg_cholesky_ex", [_spd(4, (2,))], ref=torch.linalg.cholesky_ex),
        Case("linalg_cholesky_ex", [NC(_spd(3))], {"upper": True}, ref=torch.linalg.cholesky_ex),
        Case("linalg_cholesky_ex", [torch.diag(torch.tensor([1.0, -1.0, 2.0], dtype=F64))],
             ref=torch.linalg.cholesky_ex),  # info 2
        Case("_linalg_slogdet", [_square(2, 4, 4)], ref=aten._linalg_slogdet),
        Case("_linalg_det", [_square(3, 3)], ref=aten._linalg_det),
        Case("_linalg_det", [torch.zeros(2, 3, 3, dtype=F64)], ref=aten._linalg_det),
        Case("_linalg_eigh", [R(2, 5, 5, dtype=F64)], ref=aten._linalg_eigh,
             check=_up_to_sign((1,))),
        Case("_linalg_eigh", [R(4, 4, dtype=F64)], {"UPLO": "U"}, ref=aten._linalg_eigh,
             check=_up_to_sign((1,))),
        Case("_linalg_eigh", [R(4, 4, dtype=F64)], {"compute_v": False}, ref=aten._linalg_eigh),
    ]
    for shape, full in (((3, 5), False), ((2, 5, 3), True), ((4, 4), True)):
        c.append(Case("_linalg_svd", [R(*shape, dtype=F64)], {"full_matrices": full},
                      ref=aten._linalg_svd, check=_svd_check(shape)))
    c.append(Case("_linalg_svd", [R(2, 3, 4, dtype=F64)], {"compute_uv": False},
                  ref=aten._linalg_svd))
    return c


# The rows without a CUDA kernel (KnownCpuOnly of runtime/ops/known_cpu_only.cc), the
# fused attention, softmax gradient, QR-family and op_cases_nn_rows.py's rows and frexp
# (op_cases_math.py) included.
CPU_ONLY = {"linalg_lu_factor_ex", "linalg_lu_solve", "linalg_solve_triangular",
            "_linalg_solve_ex", "linalg_inv_ex", "linalg_cholesky_ex", "_linalg_slogdet",
            "_linalg_det", "_linalg_eigh", "_linalg_svd", "triangular_solve",
            "frexp"} | ATTENTION_CPU_ONLY | NN_CPU_ONLY | QR_CPU_ONLY | NN_ROWS_CPU_ONLY \
    | RESAMPLE_CPU_ONLY
