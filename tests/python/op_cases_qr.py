"""Reference cases of op_cases.py for the LAPACK rows of the QR family, least squares, the matrix
exponential and LDL (runtime/ops/lapack_qr_ops.cc, lapack_matrix_ops.cc): named and shaped as
ATen's ops, so the references are ATen's own, compared by value (LAPACK's Householder QR,
Bunch-Kaufman LDL and the least squares drivers are deterministic; full-rank inputs, where every
driver's solution is unique). The rows are CPU-only (KnownCpuOnly): cuda:0 skips them."""

from __future__ import annotations

from typing import List

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
        Case("ormqr", [h, tau, R(2, 5, 4, dtype=F64)], ref=torch.ormqr),
        Case("ormqr", [h, tau, NC(R(2, 5, 2, dtype=F64))], {"transpose": True}, ref=torch.ormqr),
        Case("ormqr", [h, tau, R(2, 4, 5, dtype=F64)], {"left": False}, ref=torch.ormqr),
        Case("ormqr", [h, tau, R(2, 3, 5, dtype=F64)], {"left": False, "transpose": True},
             ref=torch.ormqr),
        Case("linalg_lstsq", [R(2, 5, 3, dtype=F64, seed=1), R(2, 5, dtype=F64, seed=2)],
             ref=torch.linalg.lstsq),
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
            c.append(Case("linalg_qr", [R(*shape, dtype=F64, seed=4)], {"mode": mode},
                          ref=torch.linalg.qr))
    c.append(Case("linalg_qr", [NC(R(4, 4, dtype=F64))], ref=torch.linalg.qr))
    c.append(Case("linalg_qr", [R(2, 4, 3, dtype=F32)], ref=torch.linalg.qr, rtol=1e-4))
    return c


# The rows without a CUDA kernel (KnownCpuOnly of runtime/ops/cuda_op_table_test.cc).
CPU_ONLY = {"geqrf", "linalg_qr", "ormqr", "linalg_householder_product", "linalg_lstsq",
            "linalg_matrix_exp", "linalg_ldl_factor_ex", "linalg_ldl_solve"}
