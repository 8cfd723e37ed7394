"""cummax/cummin, logcumsumexp, mode, searchsorted (and isin, which PyTorch decomposes into
sort and searchsorted) run on the daemon (its rows of runtime/ops/scan_ops.cc; no CPU fallback:
conftest's ``no_fallback``) with CPU PyTorch's values: float32/float64/int64/bool/bfloat16,
0-d and empty tensors, every dim (negative ones too), non-contiguous inputs, ties, NaN and
infinities. Gradients (PyTorch's autograd on the client, its backward ops on the daemon) match
CPU PyTorch's, and central finite differences of the device's own forward in float64."""

from __future__ import annotations

import itertools
import math

import pytest

torch = pytest.importorskip("torch")

D = "tensord"
SHAPES = ((), (0, 3), (6,), (4, 5), (3, 4, 2))
NAN, INF = math.nan, math.inf


def _values(shape: tuple, dtype: "torch.dtype", seed: int, special: bool = True) -> "torch.Tensor":
    """Values with ties (small integers, halves for floats) and, for floats, NaN and inf."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    t = torch.randint(-3, 4, shape, generator=g).to(torch.float64)
    if dtype.is_floating_point:
        t = t / 2
        if special and t.numel() > 3:
            flat = t.view(-1)
            picks = torch.randperm(flat.numel(), generator=g)[:3]
            flat[picks] = torch.tensor([NAN, INF, -INF], dtype=torch.float64)
    return t.to(dtype)


def _same(got: object, want: object) -> None:
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert got.device.type == D and got.dtype == want.dtype and got.shape == want.shape, (
        got.dtype, want.dtype, got.shape, want.shape)
    if want.dtype == torch.bfloat16:  # the daemon computes in float32 and rounds once
        torch.testing.assert_close(got.cpu().float(), want.float(), rtol=2e-2, atol=2e-2,
                                   equal_nan=True)
    else:
        torch.testing.assert_close(got.cpu(), want, equal_nan=True)


def _dims(shape: tuple) -> range:
    return range(-max(len(shape), 1), max(len(shape), 1))


@pytest.mark.parametrize("op", ("cummax", "cummin"))
@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.int64, torch.bool,
                                   torch.bfloat16), ids=str)
def test_cummax_cummin_match_pytorch(td: object, op: str, dtype: "torch.dtype") -> None:
    for shape in SHAPES:
        for dim in _dims(shape):
            x = _values(shape, dtype, seed=len(shape) * 10 + dim)
            _same(tuple(getattr(torch, op)(x.to(D), dim)), tuple(getattr(torch, op)(x, dim)))


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16), ids=str)
def test_logcumsumexp_matches_pytorch(td: object, dtype: "torch.dtype") -> None:
    for shape in SHAPES:
        for dim in _dims(shape):
            x = _values(shape, dtype, seed=len(shape) * 10 + dim) * 7
            _same(torch.logcumsumexp(x.to(D), dim), torch.logcumsumexp(x, dim))
    rows = torch.tensor([[-INF, -INF, 0., 1.], [INF, 1., -INF, 2.], [NAN, 0., 1., 2.],
                         [-INF, INF, INF, -INF], [80., 90., 100., -100.]], dtype=dtype)
    _same(torch.logcumsumexp(rows.to(D), 1), torch.logcumsumexp(rows, 1))


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.int64, torch.bool,
                                   torch.bfloat16), ids=str)
def test_mode_matches_pytorch(td: object, dtype: "torch.dtype") -> None:
    """Ties between values (the smallest most frequent one) and within a value (its last
    index); rows of at most 12 elements (PyTorch 1.13's CPU mode sorts them stably)."""
    for shape in ((), (6,), (4, 5), (3, 4, 2), (12, 3)):
        for dim, keepdim in itertools.product(_dims(shape), (False, True)):
            x = _values(shape, dtype, seed=len(shape) * 10 + dim, special=False)
            _same(tuple(torch.mode(x.to(D), dim, keepdim)), tuple(torch.mode(x, dim, keepdim)))
    x = _values((3, 0, 4), torch.float32, seed=1)
    _same(tuple(torch.mode(x.to(D), 2)), tuple(torch.mode(x, 2)))


def test_non_contiguous_inputs(td: object) -> None:
    x = _values((5, 4), torch.float64, seed=3, special=False)
    xt = x.t().contiguous().to(D).t()  # the device holds x through a transposed view
    for dim in (0, 1, -1):
        for op in (torch.cummax, torch.cummin):
            _same(tuple(op(xt, dim)), tuple(op(x, dim)))
        _same(torch.logcumsumexp(xt, dim), torch.logcumsumexp(x, dim))
        _same(tuple(torch.mode(xt, dim)), tuple(torch.mode(x, dim)))
    bd = torch.sort(x, dim=0)[0]
    v = _values((5, 4), torch.float64, seed=4, special=False)
    want = torch.searchsorted(bd.t().contiguous(), v.t().contiguous())
    got = torch.searchsorted(bd.t().contiguous().to(D), v.to(D).t())
    _same(got, want)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.int64, torch.bfloat16),
                         ids=str)
def test_searchsorted_matches_pytorch(td: object, dtype: "torch.dtype") -> None:
    g = torch.Generator().manual_seed(0)
    cases = [((7,), (3, 4)), ((7,), ()), ((3, 6), (3, 4)), ((2, 3, 5), (2, 3, 2)), ((0,), (3,)),
             ((4,), (0,)), ((2, 0), (2, 3))]
    for (bshape, vshape), right, int32 in itertools.product(cases, (False, True), (False, True)):
        unsorted = _values(bshape, dtype, seed=int(torch.randint(99, (1,), generator=g)),
                           special=False)
        bd, sorter = torch.sort(unsorted, dim=-1, stable=True)
        v = _values(vshape, dtype, seed=5, special=False)
        side = "right" if right else "left"
        for kw in ({"right": right}, {"side": side}):
            want = torch.searchsorted(bd, v, out_int32=int32, **kw)
            _same(torch.searchsorted(bd.to(D), v.to(D), out_int32=int32, **kw), want)
            want = torch.searchsorted(unsorted, v, out_int32=int32, sorter=sorter, **kw)
            got = torch.searchsorted(unsorted.to(D), v.to(D), out_int32=int32,
                                     sorter=sorter.to(D), **kw)
            _same(got, want)


def test_searchsorted_scalars_promotion_and_nan(td: object) -> None:
    bd = torch.tensor([1., 2., 2., 3., NAN])
    for right in (False, True):
        for v in (2.0, 2, -INF, NAN):  # the .Scalar overload
            _same(torch.searchsorted(bd.to(D), v, right=right), torch.searchsorted(bd, v,
                                                                                  right=right))
        v = torch.tensor([NAN, 2., 0.5, INF])
        _same(torch.searchsorted(bd.to(D), v.to(D), right=right),
              torch.searchsorted(bd, v, right=right))
    ints = torch.tensor([0, 2, 2, 5])  # int64 boundaries, float values: compared as floats
    v = torch.tensor([1.5, 2.0, 2.5], dtype=torch.float64)
    _same(torch.searchsorted(ints.to(D), v.to(D)), torch.searchsorted(ints, v))
    _same(torch.searchsorted(ints.to(D), 2.5), torch.searchsorted(ints, 2.5))


@pytest.mark.parametrize("dtype", (torch.float32, torch.int64), ids=str)
def test_isin_runs_on_the_daemon(td: object, dtype: "torch.dtype") -> None:
    """Both of PyTorch's isin paths (few test elements: a broadcast compare; many: sort and
    searchsorted)."""
    for n, m in ((20, 5), (5, 20), (0, 4)):
        a, b = _values((n,), dtype, seed=n, special=False), _values((m,), dtype, seed=m,
                                                                    special=False)
        for invert in (False, True):
            _same(torch.isin(a.to(D), b.to(D), invert=invert), torch.isin(a, b, invert=invert))


def _loss(op: str, x: "torch.Tensor", dim: int, w: "torch.Tensor") -> "torch.Tensor":
    out = {"cummax": lambda: torch.cummax(x, dim).values,
           "cummin": lambda: torch.cummin(x, dim).values,
           "logcumsumexp": lambda: torch.logcumsumexp(x, dim),
           "mode": lambda: torch.mode(x, dim).values}[op]()
    return (out * w).sum()


@pytest.mark.parametrize("op", ("cummax", "cummin", "logcumsumexp", "mode"))
def test_gradients_match_pytorch_and_finite_differences(td: object, op: str) -> None:
    """Distinct values (a finite difference across a tie means nothing); mode's rows then
    have no repeated value, so its mode is the row's minimum."""
    g = torch.Generator().manual_seed(1)
    for shape, dim in (((5,), 0), ((3, 4), 1), ((3, 4), -2), ((2, 3, 4), 1), ((), 0)):
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        out_shape = torch.mode(x, dim).values.shape if op == "mode" else x.shape
        w = torch.randn(out_shape, generator=g, dtype=torch.float64)
        xc = x.clone().requires_grad_(True)
        want, = torch.autograd.grad(_loss(op, xc, dim, w), xc)
        xd = x.to(D).requires_grad_(True)
        got, = torch.autograd.grad(_loss(op, xd, dim, w.to(D)), xd)
        assert got.device.type == D
        torch.testing.assert_close(got.cpu(), want)
        eps, flat = 1e-6, x.reshape(-1)
        for i in range(min(flat.numel(), 8)):
            step = torch.zeros_like(flat)
            step[i] = eps
            hi = _loss(op, (flat + step).reshape(shape).to(D), dim, w.to(D)).item()
            lo = _loss(op, (flat - step).reshape(shape).to(D), dim, w.to(D)).item()
            assert abs((hi - lo) / (2 * eps) - got.cpu().reshape(-1)[i].item()) < 1e-5, (op, i)
