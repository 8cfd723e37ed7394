"""torch.linalg's QR family, least squares, matrix exponential and LDL on the daemon's LAPACK rows
(runtime/ops/lapack_qr_ops.cc, lapack_matrix_ops.cc): qr (every mode), geqrf,
householder_product, ormqr, lstsq (every CPU driver), matrix_exp, ldl_factor(_ex) and ldl_solve
run without the CPU fallback (conftest's ``no_fallback``) and match CPU PyTorch by value (the
factorizations are LAPACK's, deterministic), and their gradients (PyTorch's formulas on the
client, calling these rows) match CPU PyTorch's and finite differences."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

D = "tensord"
DTYPES = [torch.float32, torch.float64]
F64 = torch.float64


def tol(dtype: "torch.dtype") -> dict:
    # PyTorch's wheels may run MKL's LAPACK, the daemon OpenBLAS's: the same algorithms,
    # rounded differently.
    return dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-9, atol=1e-9)


def randn(*shape: int, dtype: "torch.dtype" = F64, seed: int = 0) -> "torch.Tensor":
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def same(got: object, want: object, dtype: "torch.dtype") -> None:
    """Equal outputs (a tensor or a tuple of them): shapes and dtypes exactly, values to tol."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.device.type == "tensord"
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if w.is_floating_point():
            torch.testing.assert_close(g.cpu(), w, **tol(dtype))
        else:
            assert torch.equal(g.cpu(), w)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 3, 5, 2)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches(td: object, dtype: "torch.dtype", shape: tuple, mode: str) -> None:
    a = randn(*shape, dtype=dtype)
    same(torch.linalg.qr(a.to(D), mode=mode), torch.linalg.qr(a, mode=mode), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_geqrf_householder_product_and_ormqr(td: object, dtype: "torch.dtype",
                                             shape: tuple) -> None:
    a = randn(*shape, dtype=dtype, seed=1)
    h, tau = torch.geqrf(a)
    same(torch.geqrf(a.to(D)), (h, tau), dtype)
    same(torch.geqrf(a.mT.to(D).mT), (h, tau), dtype)  # a non-contiguous input
    m = shape[-2]
    if m >= shape[-1]:
        same(torch.linalg.householder_product(h.to(D), tau.to(D)),
             torch.linalg.householder_product(h, tau), dtype)
    for left in (True, False):
        for transpose in (False, True):
            c = randn(*shape[:-2], *((m, 3) if left else (3, m)), dtype=dtype, seed=2)
            same(torch.ormqr(h.to(D), tau.to(D), c.to(D), left, transpose),
                 torch.ormqr(h, tau, c, left, transpose), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shapes", [((6, 3), (6, 2)), ((2, 6, 3), (2, 6)),
                                    ((1, 3, 5), (2, 3, 4)), ((2, 4, 4), (2, 4, 1))])
def test_lstsq_matches(td: object, dtype: "torch.dtype", driver: str, shapes: tuple) -> None:
    a, b = randn(*shapes[0], dtype=dtype, seed=3), randn(*shapes[1], dtype=dtype, seed=4)
    same(torch.linalg.lstsq(a.to(D), b.to(D), driver=driver),
         torch.linalg.lstsq(a, b, driver=driver), dtype)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_lstsq_rank_deficient(td: object, driver: str) -> None:
    """Rank 2 of 3 columns: ranks and the minimum norm solution match; gelsd/gelss's residuals
    are empty as ATen's (it drops them when a matrix has rank < n)."""
    a = randn(2, 6, 3, seed=5)
    a[..., 2] = a[..., 0] + a[..., 1]
    b = randn(2, 6, 2, seed=6)
    got, want = torch.linalg.lstsq(a.to(D), b.to(D), driver=driver), \
        torch.linalg.lstsq(a, b, driver=driver)
    same(got, want, F64)
    assert got.rank.cpu().tolist() == [2, 2]
    # Nearly deficient (third singular value ~1e-3 of the first): rcond decides the rank, well
    # clear of where LAPACK builds' condition estimates could disagree.
    a[..., 2] += 1e-3 * randn(2, 6, seed=7)
    for rcond, rank in ((1e-6, 3), (1e-2, 2)):
        got = torch.linalg.lstsq(a.to(D), b.to(D), rcond=rcond, driver=driver)
        same(got, torch.linalg.lstsq(a, b, rcond=rcond, driver=driver), F64)
        assert got.rank.cpu().tolist() == [rank, rank]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.1, 1.0, 8.0])
def test_matrix_exp_matches(td: object, dtype: "torch.dtype", scale: float) -> None:
    """Against PyTorch's float64 value (the daemon computes in float64 for float32 too; PyTorch's
    float32 series is itself a few 1e-4 off at scale 8)."""
    a = randn(2, 4, 4, seed=7) * scale
    want = torch.linalg.matrix_exp(a)
    got = torch.linalg.matrix_exp(a.to(dtype).to(D))
    assert got.dtype == dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu().double(), want,
                               **(dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32
                                  else tol(dtype)))
    same(torch.matrix_exp(a.to(dtype).to(D).mT), torch.matrix_exp(a.to(dtype).mT),
         dtype) if scale < 8 else None


@pytest.mark.parametrize("dtype", DTYPES)
def test_ldl_factor_and_solve(td: object, dtype: "torch.dtype") -> None:
    s = randn(3, 5, 5, seed=8)
    s = (s + s.mT).to(dtype)
    same(torch.linalg.ldl_factor_ex(s.to(D)), torch.linalg.ldl_factor_ex(s), dtype)
    ld, piv = torch.linalg.ldl_factor(s)
    same(torch.linalg.ldl_factor(s.to(D)), (ld, piv), dtype)
    b = randn(3, 5, 2, dtype=dtype, seed=9)
    same(torch.linalg.ldl_solve(ld.to(D), piv.to(D), b.to(D)), torch.linalg.ldl_solve(ld, piv, b),
         dtype)
    # Broadcast batches (PyTorch's own kernel crashes on them, reading pivots past their batch:
    # compared with the explicitly expanded call).
    b4 = randn(2, 1, 5, 2, dtype=dtype, seed=10)
    want = torch.linalg.ldl_solve(ld.expand(2, 3, 5, 5).contiguous(),
                                  piv.expand(2, 3, 5).contiguous(), b4.expand(2, 3, 5, 2))
    same(torch.linalg.ldl_solve(ld.to(D), piv.to(D), b4.to(D)), want, dtype)


def grads(fn: object, *inputs: "torch.Tensor") -> list:
    out = fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((o * o).sum() for o in outs if o.is_floating_point() and o.requires_grad)
    return list(torch.autograd.grad(loss, inputs))


@pytest.mark.parametrize("name", ["qr", "qr_wide", "householder_product", "ormqr", "lstsq",
                                  "lstsq_gelsd", "matrix_exp"])
def test_gradients_match_cpu_and_finite_differences(td: object, name: str) -> None:
    a = randn(2, 5, 3, seed=11)
    h, tau = torch.geqrf(a)
    cases = {
        "qr": (lambda x: torch.linalg.qr(x), [a]),
        "qr_wide": (lambda x: torch.linalg.qr(x), [a.mT.contiguous()]),
        "householder_product": (torch.linalg.householder_product, [h, tau]),
        "ormqr": (lambda x, t, c: torch.ormqr(x, t, c, True, True), [h, tau, randn(2, 5, 2)]),
        "lstsq": (lambda x, y: torch.linalg.lstsq(x, y).solution, [a, randn(2, 5, 2, seed=12)]),
        "lstsq_gelsd": (lambda x, y: torch.linalg.lstsq(x, y, driver="gelsd").solution,
                        [a, randn(2, 5, 2, seed=12)]),
        "matrix_exp": (torch.linalg.matrix_exp, [randn(2, 3, 3, seed=13)]),
    }
    fn, inputs = cases[name]
    cpu = [t.clone().requires_grad_() for t in inputs]
    dev = [t.to(D).requires_grad_() for t in inputs]
    for g, w in zip(grads(fn, *dev), grads(fn, *cpu)):
        assert g.device.type == "tensord"
        torch.testing.assert_close(g.cpu(), w, rtol=1e-8, atol=1e-8)
    small = [t[:1].detach().to(D).requires_grad_() for t in inputs]
    assert torch.autograd.gradcheck(fn, small, atol=1e-6, rtol=1e-5)


@pytest.mark.allow_fallback  # the handler declines what ATen refuses: PyTorch's CPU kernel raises
def test_lstsq_keeps_pytorchs_errors(td: object) -> None:
    a, b = randn(5, 3).to(D), randn(5, 2).to(D)
    with pytest.raises(RuntimeError, match="driver"):
        torch.linalg.lstsq(a, b, driver="gelsx")
    with pytest.raises(RuntimeError, match="dim"):
        torch.linalg.lstsq(a, randn(2, 2, 5, 2).to(D))
