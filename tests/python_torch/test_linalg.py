"""torch.linalg on the daemon's LAPACK rows (runtime/ops/lapack_ops.cc): lu_factor, lu_solve,
solve_triangular, solve, inv, cholesky, det, slogdet, eigh, svd and pinv run without the CPU
fallback (conftest's ``no_fallback``) and match CPU PyTorch: values where they are unique (LU,
pivots, info, inverses, solutions, Cholesky factors, determinants, eigenvalues, singular
values), invariants where PyTorch's are defined only up to sign (eigenvectors, singular
vectors)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

D = "tensord"
DTYPES = [torch.float32, torch.float64]


def tol(dtype: "torch.dtype") -> dict:
    # PyTorch's wheels may run MKL's LAPACK, the daemon OpenBLAS's: the same algorithms,
    # rounded differently.
    return dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-9, atol=1e-9)


def well_conditioned(*shape: int, dtype: "torch.dtype", seed: int = 0) -> "torch.Tensor":
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(*shape, generator=g, dtype=torch.float64)
    n = min(shape[-2:])
    a[..., :n, :n] += 3 * torch.eye(n, dtype=torch.float64)
    return a.to(dtype)


def close(got: "torch.Tensor", want: "torch.Tensor", dtype: "torch.dtype") -> None:
    assert got.device.type == "tensord"
    torch.testing.assert_close(got.cpu(), want, **tol(dtype))


def equal(got: "torch.Tensor", want: "torch.Tensor") -> None:
    assert got.device.type == "tensord"
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 4, 4), (2, 3, 5), (5, 3)])
def test_lu_factor_matches(td: object, dtype: "torch.dtype", shape: tuple) -> None:
    a = well_conditioned(*shape, dtype=dtype)
    lu, piv, info = torch.linalg.lu_factor_ex(a.to(D))
    want = torch.linalg.lu_factor_ex(a)
    close(lu, want.LU, dtype)
    equal(piv, want.pivots)
    equal(info, want.info)
    lu2, piv2 = torch.linalg.lu_factor(a.to(D))
    close(lu2, want.LU, dtype)
    equal(piv2, want.pivots)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 4, 4), (3, 5), (2, 5, 3)])
def test_lu_unpack_matches(td: object, dtype: "torch.dtype", shape: tuple) -> None:
    a = well_conditioned(*shape, dtype=dtype, seed=8)
    lu, piv = torch.linalg.lu_factor(a)
    got = torch.lu_unpack(lu.to(D), piv.to(D))
    for g, w in zip(got, torch.lu_unpack(lu, piv)):
        close(g, w, dtype)
    p, l, u = torch.linalg.lu(a.to(D))
    torch.testing.assert_close((p @ l @ u).cpu(), a, **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_solve_every_side_and_adjoint(td: object, dtype: "torch.dtype") -> None:
    a = well_conditioned(2, 4, 4, dtype=dtype)
    lu, piv = torch.linalg.lu_factor(a)
    g = torch.Generator().manual_seed(1)
    for left in (True, False):
        for adjoint in (False, True):
            b = torch.randn((3, 2, 4, 2) if left else (3, 2, 2, 4), generator=g).to(dtype)
            got = torch.linalg.lu_solve(lu.to(D), piv.to(D), b.to(D), left=left, adjoint=adjoint)
            close(got, torch.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_triangular_every_side(td: object, dtype: "torch.dtype") -> None:
    a = well_conditioned(2, 4, 4, dtype=dtype)  # a full matrix: only one triangle is read
    g = torch.Generator().manual_seed(7)
    for upper in (False, True):
        for left in (True, False):
            for unit in (False, True):
                b = torch.randn((3, 1, 4, 2) if left else (2, 5, 4), generator=g).to(dtype)
                got = torch.linalg.solve_triangular(a.to(D), b.to(D), upper=upper, left=left,
                                                    unitriangular=unit)
                want = torch.linalg.solve_triangular(a, b, upper=upper, left=left,
                                                     unitriangular=unit)
                close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_matrix_vector_and_right(td: object, dtype: "torch.dtype") -> None:
    a = well_conditioned(2, 4, 4, dtype=dtype)
    g = torch.Generator().manual_seed(2)
    cases = [(torch.randn(2, 4, 3, generator=g), True), (torch.randn(4, generator=g), True),
             (torch.randn(2, 4, generator=g), True), (torch.randn(3, 2, 4, 4, generator=g), True),
             (torch.randn(2, 3, 4, generator=g), False)]
    for b, left in cases:
        b = b.to(dtype)
        close(torch.linalg.solve(a.to(D), b.to(D), left=left),
              torch.linalg.solve(a, b, left=left), dtype)
    # Every output of the _ex op (LU and pivots of A itself), for A and a transposed view.
    b = torch.randn(2, 4, 3, generator=g).to(dtype)
    for ad, ac in ((a.to(D), a), (a.to(D).mT, a.mT)):
        got = torch.ops.aten._linalg_solve_ex(ad, b.to(D))
        want = torch.ops.aten._linalg_solve_ex(ac, b)
        close(got[0], want[0], dtype)
        close(got[1], want[1], dtype)
        equal(got[2], want[2])
        equal(got[3], want[3])


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_and_singular_info(td: object, dtype: "torch.dtype") -> None:
    a = well_conditioned(3, 5, 5, dtype=dtype)
    close(torch.linalg.inv(a.to(D)), torch.linalg.inv(a), dtype)
    close(torch.inverse(a.to(D)), torch.inverse(a), dtype)
    s = a.clone()
    s[1, 4] = 0  # batch 1: a zero last row
    s[2, :, 2] = 0  # batch 2: a zero column
    got_inv, got_info = torch.linalg.inv_ex(s.to(D))
    want_inv, want_info = torch.linalg.inv_ex(s)
    equal(got_info, want_info)
    assert want_info.tolist()[0] == 0 and want_info.tolist()[1] > 0
    close(got_inv[0], want_inv[0], dtype)
    _, _, lu_info = torch.linalg.lu_factor_ex(s.to(D))
    equal(lu_info, torch.linalg.lu_factor_ex(s).info)
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.inv(s.to(D))
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.solve(s.to(D), torch.ones(3, 5, 1, dtype=dtype, device=D))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_lower_upper_and_not_positive_definite(td: object, dtype: "torch.dtype") -> None:
    m = well_conditioned(2, 4, 4, dtype=torch.float64)
    spd = (m @ m.mT + 4 * torch.eye(4, dtype=torch.float64)).to(dtype)
    for upper in (False, True):
        got, info = torch.linalg.cholesky_ex(spd.to(D), upper=upper)
        want, want_info = torch.linalg.cholesky_ex(spd, upper=upper)
        close(got, want, dtype)
        equal(info, want_info)
    close(torch.linalg.cholesky(spd.to(D)), torch.linalg.cholesky(spd), dtype)
    bad = torch.diag_embed(torch.tensor([[1.0, -1.0, 1.0], [1.0, 2.0, 3.0]], dtype=dtype))
    _, info = torch.linalg.cholesky_ex(bad.to(D))
    equal(info, torch.linalg.cholesky_ex(bad).info)
    assert info.cpu().tolist() == [2, 0]
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.cholesky(bad.to(D))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_solve_and_inverse(td: object, dtype: "torch.dtype") -> None:
    m = well_conditioned(2, 4, 4, dtype=torch.float64, seed=9)
    spd = (m @ m.mT + 4 * torch.eye(4, dtype=torch.float64)).to(dtype)
    b = torch.randn(3, 1, 4, 2, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(10)).to(dtype)
    for upper in (False, True):
        f = torch.linalg.cholesky(spd, upper=upper)
        close(torch.cholesky_solve(b.to(D), f.to(D), upper=upper),
              torch.cholesky_solve(b, f, upper=upper), dtype)
        close(torch.cholesky_inverse(f.to(D), upper=upper), torch.cholesky_inverse(f, upper=upper),
              dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_det_slogdet_logdet_with_singular(td: object, dtype: "torch.dtype") -> None:
    a = well_conditioned(3, 4, 4, dtype=dtype)
    a[1] = -a[1]  # a mix of signs
    a[2, 3] = 0  # singular: det 0, sign 0, logabsdet -inf
    close(torch.linalg.det(a.to(D)), torch.linalg.det(a), dtype)
    sign, logabs = torch.linalg.slogdet(a.to(D))
    want = torch.linalg.slogdet(a)
    close(sign, want.sign, dtype)
    close(logabs, want.logabsdet, dtype)
    assert logabs.cpu()[2].item() == float("-inf")
    close(torch.det(a[:2].to(D)), torch.det(a[:2]), dtype)
    spd = a[:1] @ a[:1].mT
    close(torch.logdet(spd.to(D)), torch.logdet(spd), dtype)
    for ad, ac in ((a.to(D), a), (a.to(D).mT, a.mT)):  # LU and pivots too (of A^T if contiguous)
        got = torch.ops.aten._linalg_slogdet(ad)
        want = torch.ops.aten._linalg_slogdet(ac)
        close(got[2], want[2], dtype)
        equal(got[3], want[3])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_values_and_invariants(td: object, dtype: "torch.dtype", uplo: str) -> None:
    g = torch.Generator().manual_seed(3)
    a = torch.randn(2, 3, 5, 5, generator=g, dtype=dtype)  # not symmetric: UPLO picks a half
    w, v = torch.linalg.eigh(a.to(D), UPLO=uplo)
    want_w = torch.linalg.eigvalsh(a, UPLO=uplo)
    close(w, want_w, dtype)
    w, v = w.cpu(), v.cpu()
    half = a.tril() if uplo == "L" else a.triu()
    sym = half + half.mT - torch.diag_embed(torch.diagonal(a, dim1=-2, dim2=-1))
    torch.testing.assert_close(sym @ v, v * w.unsqueeze(-2), **tol(dtype))
    torch.testing.assert_close(v.mT @ v, torch.eye(5, dtype=dtype).expand(2, 3, 5, 5), **tol(dtype))
    close(torch.linalg.eigvalsh(a.to(D), UPLO=uplo), want_w, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 5), (2, 5, 3), (2, 4, 4)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_values_and_invariants(td: object, dtype: "torch.dtype", shape: tuple,
                                   full_matrices: bool) -> None:
    g = torch.Generator().manual_seed(4)
    a = torch.randn(*shape, generator=g, dtype=dtype)
    u, s, vh = torch.linalg.svd(a.to(D), full_matrices=full_matrices)
    wu, ws, wvh = torch.linalg.svd(a, full_matrices=full_matrices)
    assert u.shape == wu.shape and vh.shape == wvh.shape
    close(s, ws, dtype)
    u, s, vh = u.cpu(), s.cpu(), vh.cpu()
    k = s.shape[-1]
    torch.testing.assert_close((u[..., :k] * s.unsqueeze(-2)) @ vh[..., :k, :], a, **tol(dtype))
    for q in (u, vh.mT):
        eye = torch.eye(q.shape[-1], dtype=dtype).expand(*q.shape[:-2], -1, -1)
        torch.testing.assert_close(q.mT @ q, eye, **tol(dtype))
    close(torch.linalg.svdvals(a.to(D)), ws, dtype)
    su, ss, sv = torch.svd(a.to(D))  # the old API: V, not Vh
    close(ss, ws, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pinv_and_hermitian_pinv(td: object, dtype: "torch.dtype") -> None:
    a = well_conditioned(2, 3, 5, dtype=dtype)
    close(torch.linalg.pinv(a.to(D)), torch.linalg.pinv(a), dtype)
    close(torch.linalg.pinv(a.to(D), rtol=0.3), torch.linalg.pinv(a, rtol=0.3), dtype)
    close(torch.pinverse(a.to(D)), torch.pinverse(a), dtype)
    sym = a @ a.mT
    close(torch.linalg.pinv(sym.to(D), hermitian=True), torch.linalg.pinv(sym, hermitian=True),
          dtype)


@pytest.mark.allow_fallback  # the values matter here; backward formulas may use unmapped ops
def test_gradients_through_pytorch_autograd(td: object) -> None:
    a = well_conditioned(3, 3, dtype=torch.float64)
    b = torch.randn(3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(6))

    def program(x: "torch.Tensor", y: "torch.Tensor") -> list:
        sym = x + x.mT
        loss = (torch.linalg.inv(x).sum() + torch.linalg.det(x) + torch.linalg.slogdet(x)[1]
                + torch.linalg.solve(x, y).sum() + torch.linalg.eigvalsh(sym).sum()
                + torch.linalg.svdvals(x).sum())
        return list(torch.autograd.grad(loss, [x, y]))

    want = program(a.clone().requires_grad_(), b.clone().requires_grad_())
    got = program(a.to(D).requires_grad_(), b.to(D).requires_grad_())
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu(), w)


@pytest.mark.allow_fallback  # the rules decline other dtypes: PyTorch's CPU kernel raises
def test_other_dtypes_keep_pytorchs_errors(td: object) -> None:
    with pytest.raises(RuntimeError):
        torch.linalg.inv(torch.eye(3, dtype=torch.int64, device=D))
