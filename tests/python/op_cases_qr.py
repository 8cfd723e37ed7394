"""Reference cases of op_cases.py for the LAPACK rows of the QR family, least squares, the matrix
exponential and LDL (runtime/ops/lapack_qr_ops.cc, lapack_matrix_ops.cc): named and shaped as
ATen's ops, so the references are ATen's own, compared by value (LAPACK's Householder QR,
Bunch-Kaufman LDL and the least squares drivers are deterministic; full-rank inputs, where every
driver's solution is unique). The rows are CPU-only (KnownCpuOnly): cuda:0 skips them."""

from __future__ import annotations

from typing import Any, List

import numpy as np

import torch

from op_case_inputs import NC, Case, R

F64 = torch.float64
F32 = torch.float32


def _geqrf(*shape: int, dtype: torch.dtype = F64) -> tuple:
    return torch.geqrf(R(*shape, dtype=dtype, seed=5))


def _symmetric(n: int, batch: tuple = (), dtype: torch.dtype = F64) -> torch.Tensor:
    m = R(*batch, n, n, dtype=F64, seed=6)
    return (m + m.mT).to(dtype)


def _lstsq(driver: str) -> object:
    return lambda a, b, **kw: torch.linalg.lstsq(a, b, driver=driver, **kw)


def _ldl_solve_broadcast(ld: torch.Tensor, piv: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """ATen's ldl_solve with LD's and B's batches broadcast first: PyTorch's own broadcasting
    of them crashes (1.13 and 2.15 read pivots past their batch), the daemon's row does it."""
    batch = torch.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    n = ld.shape[-1]
    return torch.linalg.ldl_solve(ld.expand(*batch, n, n).contiguous(),
                                  piv.expand(*batch, n).contiguous(),
                                  b.expand(*batch, *b.shape[-2:]).contiguous())


def _ormqr(h: torch.Tensor, tau: torch.Tensor, c: torch.Tensor, left: bool = True,
           transpose: bool = False) -> torch.Tensor:
    """ormqr as the product of the same reflectors in full (householder_product of the input
    padded to square with zero columns): torch 1.13 has no derivative for ormqr itself, and this
    is its value and differentiable (the gradient suite's reference)."""
    r = h.shape[-2]
    pad = torch.zeros(*h.shape[:-1], r - h.shape[-1], dtype=h.dtype)
    q = torch.linalg.householder_product(torch.cat([h, pad], -1), tau)
    q = q.mT if transpose else q
    return q @ c if left else c @ q


def _values(got: Any, want: Any) -> None:
    """The default comparison, as a check: it keeps a case out of the gradient suite
    (test_autograd_reference's _grad_case) where the reference PyTorch has no gradient (linalg_qr's
    mode 'r', and 'complete' for m > n, where the daemon's backward raises PyTorch's error; a
    vector b of lstsq, whose gradient torch 1.13 fails to compute)."""
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        g = g.numpy() if hasattr(g, "numpy") else np.asarray(g)
        assert g.shape == tuple(w.shape) and g.dtype == w.numpy().dtype, (g.shape, w.shape)
        if w.numel():
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-9, atol=1e-10)


def qr_cases() -> List[Case]:
    h, tau = _geqrf(2, 5, 3)
    h32, tau32 = _geqrf(4, 4, dtype=F32)
    ld, piv = torch.linalg.ldl_factor(_symmetric(4, (2,)))
    c = [
        Case("geqrf", [R(5, 3, dtype=F64)], ref=torch.geqrf),
        Case("geqrf", [NC(R(2, 3, 4, dtype=F64))], ref=torch.geqrf),
        Case("geqrf", [R(4, 4, dtype=F32)], ref=torch.geqrf, rtol=1e-4),
        Case("linalg_householder_product", [h, tau], ref=torch.linalg.householder_product),
        Case("linalg_householder_product", [h[..., :2], tau[..., :1]],
             ref=torch.linalg.householder_product),
        Case("linalg_householder_product", [h32, tau32], ref=torch.linalg.householder_product,
             rtol=1e-4),
        Case("ormqr", [h, tau, R(2, 5, 4, dtype=F64)], ref=_ormqr),
        Case("ormqr", [h, tau, NC(R(2, 5, 2, dtype=F64))], {"transpose": True}, ref=_ormqr),
        Case("ormqr", [h, tau, R(2, 4, 5, dtype=F64)], {"left": False}, ref=_ormqr),
        Case("ormqr", [h, tau, R(2, 3, 5, dtype=F64)], {"left": False, "transpose": True},
             ref=_ormqr),
        Case("ormqr", [h32, tau32, R(4, 2, dtype=F32)], ref=_ormqr, rtol=1e-4),
        # A vector b: torch 1.13's own lstsq backward fails on it (mat1 and mat2 shapes cannot
        # be multiplied), so a check keeps it out of the gradient suite; test_linalg_grads.py
        # checks the daemon's against the matrix case.
        Case("linalg_lstsq", [R(2, 5, 3, dtype=F64, seed=1), R(2, 5, dtype=F64, seed=2)],
             ref=torch.linalg.lstsq, check=_values),
        Case("linalg_lstsq", [R(1, 3, 5, dtype=F64, seed=1), R(2, 3, 2, dtype=F64, seed=2)],
             {"driver": "gelsd"}, ref=torch.linalg.lstsq),
        Case("linalg_lstsq", [NC(R(6, 4, dtype=F64, seed=1)), R(6, 2, dtype=F64, seed=2)],
             {"driver": "gelss", "rcond": 1e-3}, ref=torch.linalg.lstsq),
        Case("linalg_lstsq", [R(2, 6, 3, dtype=F64, seed=1), R(2, 6, 2, dtype=F64, seed=2)],
             {"driver": "gels"}, ref=torch.linalg.lstsq),
        Case("linalg_lstsq", [R(6, 3, dtype=F32, seed=1), R(6, 2, dtype=F32, seed=2)],
             {"driver": "gelsy"}, ref=torch.linalg.lstsq, rtol=1e-4),
        Case("linalg_matrix_exp", [R(2, 4, 4, dtype=F64)], ref=torch.linalg.matrix_exp),
        Case("linalg_matrix_exp", [3 * R(5, 5, dtype=F64)], ref=torch.linalg.matrix_exp),
        Case("linalg_matrix_exp", [NC(R(3, 3, dtype=F64) / 4)], ref=torch.linalg.matrix_exp),
        Case("linalg_matrix_exp", [R(3, 3, dtype=F32) / 2], ref=torch.linalg.matrix_exp,
             rtol=1e-4),
        Case("linalg_ldl_factor_ex", [_symmetric(4, (2,))], ref=torch.linalg.ldl_factor_ex),
        Case("linalg_ldl_factor_ex", [NC(_symmetric(5))], ref=torch.linalg.ldl_factor_ex),
        Case("linalg_ldl_factor_ex", [_symmetric(3, dtype=F32)], ref=torch.linalg.ldl_factor_ex,
             rtol=1e-4),
        Case("linalg_ldl_solve", [ld, piv, R(2, 4, 3, dtype=F64)], ref=torch.linalg.ldl_solve),
        Case("linalg_ldl_solve", [ld, piv, R(3, 1, 4, 2, dtype=F64)], ref=_ldl_solve_broadcast),
    ]
    for mode in ("reduced", "complete", "r"):
        for shape in ((5, 3), (2, 3, 5)):
            differentiable = mode == "reduced" or (mode == "complete" and shape[-2] <= shape[-1])
            c.append(Case("linalg_qr", [R(*shape, dtype=F64, seed=4)], {"mode": mode},
                          ref=torch.linalg.qr, check=None if differentiable else _values))
    c.append(Case("linalg_qr", [NC(R(4, 4, dtype=F64))], ref=torch.linalg.qr))
    # Empty matrices: LAPACK's quick returns (gels zeroes b: ATen's residuals are 0).
    c.append(Case("linalg_qr", [R(3, 0, dtype=F64)], {"mode": "complete"}, ref=torch.linalg.qr))
    c.append(Case("linalg_lstsq", [R(3, 0, dtype=F64), R(3, 2, dtype=F64)], {"driver": "gels"},
                  ref=torch.linalg.lstsq))
    c.append(Case("linalg_lstsq", [R(3, 0, dtype=F64), R(3, 2, dtype=F64)], {"driver": "gelsd"},
                  ref=torch.linalg.lstsq))
    c.append(Case("linalg_matrix_exp", [R(2, 0, 0, dtype=F64)], ref=torch.linalg.matrix_exp))
    c.append(Case("linalg_qr", [R(2, 4, 3, dtype=F32)], ref=torch.linalg.qr, rtol=1e-4))
    return c


# The rows without a CUDA kernel (KnownCpuOnly of runtime/ops/known_cpu_only.cc).
CPU_ONLY = {"geqrf", "linalg_qr", "ormqr", "linalg_householder_product", "linalg_lstsq",
            "linalg_matrix_exp", "linalg_ldl_factor_ex", "linalg_ldl_solve"}
