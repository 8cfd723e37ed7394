"""igamma/igammac, frexp and triangular_solve on the tensord device (the daemon's rows of those
names) against CPU PyTorch: torch.special.gammainc/gammaincc and torch.igamma(c) with their
boundaries and gradient in x; torch.frexp's mantissa and int32 exponent, out= and bfloat16;
torch.triangular_solve in every flag, batches broadcast, and the gradients of both inputs (a
float64 gradcheck too); no op on the CPU fallback (conftest's autouse check); integer-only
igamma raises PyTorch's error."""

from __future__ import annotations

import itertools
import warnings

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


def _close(got: torch.Tensor, want: torch.Tensor, **kw: object) -> None:
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **kw)


@pytest.mark.parametrize("fn", [torch.special.gammainc, torch.special.gammaincc, torch.igamma,
                                torch.igammac])
def test_incomplete_gamma_values_and_gradient(td: object, fn: object) -> None:
    g = torch.Generator().manual_seed(0)
    a = torch.rand(4, 1, generator=g, dtype=torch.float64) * 40 + 0.1  # up to the asymptotic
    x = (torch.rand(5, generator=g, dtype=torch.float64) * 40 + 0.01).requires_grad_()
    xd = x.detach().to(D).requires_grad_()
    got = fn(a.to(D), xd)
    want = fn(a, x)
    _close(got, want.detach(), rtol=1e-8, atol=1e-12)  # PyTorch's float pi (igamma_math.h)
    cot = torch.linspace(-1, 2, want.numel(), dtype=want.dtype).reshape(want.shape)
    (got * cot.to(D)).sum().backward()
    (want * cot).sum().backward()
    _close(xd.grad, x.grad, rtol=1e-9, atol=1e-12)
    inf, nan = float("inf"), float("nan")
    edges_a = torch.tensor([0.0, 0.0, 2.0, -1.0, inf, 2.0, nan, 0.5])
    edges_x = torch.tensor([3.0, 0.0, 0.0, 2.0, 5.0, inf, 1.0, 0.25])
    _close(fn(edges_a.to(D), edges_x.to(D)), fn(edges_a, edges_x))
    half = torch.tensor([0.5, 2.0, 7.0], dtype=torch.bfloat16)
    _close(fn(half.to(D), half.flip(0).to(D)), fn(half, half.flip(0)))


def test_integer_igamma_is_refused_as_pytorch_refuses_it(td: object) -> None:
    a = torch.tensor([1, 2])
    with pytest.raises(NotImplementedError) as want:
        torch.igamma(a, a)
    with pytest.raises(NotImplementedError) as got:
        torch.igamma(a.to(D), a.to(D))
    assert str(got.value) == str(want.value)
    assert torch.igamma(a.to(D), a.to(D, torch.float32)).dtype == torch.float32


def test_frexp_values_out_and_gradient(td: object) -> None:
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([0.0, -0.0, 1.0, -3.5, 0.1, inf, -inf, nan, 1e-40, 6e4])
    m, e = torch.frexp(x.to(D))
    want_m, want_e = torch.frexp(x)
    assert e.dtype == torch.int32
    _close(m, want_m, rtol=0, atol=0)
    _close(e, want_e)
    mo, eo = torch.empty(10, device=D), torch.empty(10, dtype=torch.int32, device=D)
    torch.frexp(x.to(D), out=(mo, eo))
    _close(mo, want_m, rtol=0, atol=0)
    _close(eo, want_e)
    b = x[[2, 3, 4, 9]].to(torch.bfloat16)
    for got, want in zip(torch.frexp(b.to(D)), torch.frexp(b)):
        _close(got, want, rtol=0, atol=0)
    w = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 9
    wd = w.to(D).requires_grad_()
    torch.frexp(wd)[0].sum().backward()
    _close(wd.grad, 1 / torch.exp2(torch.frexp(w)[1].double()))


@pytest.mark.parametrize("upper,transpose,unitriangular",
                         list(itertools.product([True, False], repeat=3)))
def test_triangular_solve_every_flag(td: object, upper: bool, transpose: bool,
                                     unitriangular: bool) -> None:
    g = torch.Generator().manual_seed(2)
    b = torch.randn(2, 1, 4, 3, generator=g)
    a = torch.randn(3, 4, 4, generator=g) + 4 * torch.eye(4)
    kw = dict(upper=upper, transpose=transpose, unitriangular=unitriangular)
    bd, ad = b.to(D).requires_grad_(), a.to(D).requires_grad_()
    bc, ac = b.clone().requires_grad_(), a.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's deprecation of triangular_solve
        got, want = torch.triangular_solve(bd, ad, **kw), torch.triangular_solve(bc, ac, **kw)
    for gt, wt in zip(got, want):
        assert gt.shape == wt.shape == ((2, 3, 4, 3) if gt is got[0] else (2, 3, 4, 4))
        _close(gt.detach(), wt.detach(), rtol=1e-5, atol=1e-6)
    cot = [torch.linspace(-1, 2, w.numel()).reshape(w.shape) for w in want]
    sum((gt * c.to(D)).sum() for gt, c in zip(got, cot)).backward()
    sum((wt * c).sum() for wt, c in zip(want, cot)).backward()
    _close(bd.grad, bc.grad, rtol=1e-4, atol=1e-5)
    _close(ad.grad, ac.grad, rtol=1e-4, atol=1e-5)


def test_triangular_solve_gradcheck(td: object) -> None:
    g = torch.Generator().manual_seed(3)
    b = torch.randn(3, 2, generator=g, dtype=torch.float64).to(D).requires_grad_()
    a = (torch.randn(3, 3, generator=g, dtype=torch.float64) + 3 * torch.eye(3,
         dtype=torch.float64)).to(D).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.autograd.gradcheck(
            lambda b, a: torch.triangular_solve(b, a, upper=False), (b, a), eps=1e-6, atol=1e-7)
