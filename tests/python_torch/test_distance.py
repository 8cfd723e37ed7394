"""torch.cdist, torch.nn.functional.pdist and torch.histc run on the daemon (its ``cdist``,
``_cdist_backward``, ``pdist``, ``_pdist_backward`` and ``histc`` rows; no CPU fallback:
conftest's ``no_fallback``) with PyTorch's values and gradients: every norm (0, fractional, 1,
between 1 and 2, 2, above 2, inf), float32/float64, broadcast batch dims, non-contiguous and
empty inputs, ties; histc's range rules (min == max: the data's range, the last bin inclusive,
values outside and NaN ignored) in float32, float64 and bfloat16."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

D = "tensord"
NORMS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf)
DTYPES = (torch.float32, torch.float64)
# (x1 shape, x2 shape): plain, batched, broadcast batch dims, 25+ rows (PyTorch's matmul path
# for p=2 in its default compute mode), one column
CDIST_SHAPES = (((4, 3), (5, 3)), ((2, 4, 3), (2, 6, 3)), ((2, 1, 3, 4), (5, 2, 4)),
                ((30, 3), (27, 3)), ((3, 1), (4, 1)))


def _tol(dtype: "torch.dtype") -> dict:
    return dict(rtol=1e-4, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-9, atol=1e-9)


def _close(got: "torch.Tensor", want: "torch.Tensor", **tol: float) -> None:
    assert got.device.type == D and got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **(tol or _tol(want.dtype)))


def _grads(fn: object, inputs: list, device: str, seed: int) -> tuple:
    """fn's value on `inputs` moved to `device` and the inputs' gradients for a fixed random
    cotangent."""
    leaves = [t.detach().to(device).requires_grad_() for t in inputs]
    out = fn(*leaves)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    grads = torch.autograd.grad(out, leaves, g.to(device), allow_unused=True)
    return out, grads


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", NORMS)
def test_cdist_values_and_gradients(td: object, p: float, dtype: "torch.dtype") -> None:
    for k, (s1, s2) in enumerate(CDIST_SHAPES):
        g = torch.Generator().manual_seed(k)
        x1 = torch.randn(s1, generator=g, dtype=dtype)
        x2 = torch.randn(s2, generator=g, dtype=dtype)
        def fn(a: object, b: object) -> object:
            return torch.cdist(a, b, p=p)
        want, want_grads = _grads(fn, [x1, x2], "cpu", seed=k)
        got, got_grads = _grads(fn, [x1, x2], D, seed=k)
        _close(got, want.detach())
        for gg, wg in zip(got_grads, want_grads):
            _close(gg, wg)


@pytest.mark.parametrize("p", (1.0, 2.0, math.inf))
def test_cdist_ties_zero_distances_and_views(td: object, p: float) -> None:
    """Equal rows (distance 0: zero gradient), repeated coordinates (ties in the max norm),
    inputs the daemon holds through transposed views."""
    x1 = torch.tensor([[0.0, 0.0, 1.0], [2.0, -2.0, 2.0], [1.0, 1.0, 1.0]], dtype=torch.float64)
    x2 = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    def fn(a: object, b: object) -> object:
        return torch.cdist(a, b, p=p)
    want, want_grads = _grads(fn, [x1, x2], "cpu", seed=1)
    got, got_grads = _grads(fn, [x1, x2], D, seed=1)
    _close(got, want.detach())
    for gg, wg in zip(got_grads, want_grads):
        _close(gg, wg)
    v1 = x1.t().contiguous().to(D).t()
    _close(torch.cdist(v1, x2.to(D), p=p), want.detach())


def test_cdist_empty_and_errors(td: object) -> None:
    for s1, s2 in (((0, 3), (4, 3)), ((2, 0), (3, 0)), ((0, 2, 3), (2, 3))):
        x1, x2 = torch.randn(s1), torch.randn(s2)
        _close(torch.cdist(x1.to(D), x2.to(D)), torch.cdist(x1, x2))
    x = torch.randn(2, 3, device=D)
    with pytest.raises(Exception, match="same number of columns"):
        torch.cdist(x, torch.randn(2, 4, device=D)).cpu()
    with pytest.raises(Exception, match="non-negative"):
        torch.cdist(x, x, p=-1.0).cpu()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", NORMS)
def test_pdist_values_and_gradients(td: object, p: float, dtype: "torch.dtype") -> None:
    for k, shape in enumerate(((5, 3), (1, 4), (2, 1), (12, 7))):
        x = torch.randn(shape, generator=torch.Generator().manual_seed(k), dtype=dtype)
        def fn(a: object) -> object:
            return torch.nn.functional.pdist(a, p=p)
        want, (want_grad,) = _grads(fn, [x], "cpu", seed=k)
        got, (got_grad,) = _grads(fn, [x], D, seed=k)
        _close(got, want.detach())
        if want.numel():
            _close(got_grad, want_grad)


def test_gradients_match_finite_differences(td: object) -> None:
    """float64 central differences of the daemon's own forward (p = 1.5, 3: smooth away from
    ties)."""
    g = torch.Generator().manual_seed(5)
    x1 = torch.randn(3, 4, generator=g, dtype=torch.float64)
    x2 = torch.randn(5, 4, generator=g, dtype=torch.float64)
    for p in (1.5, 3.0):
        for fn, inputs in ((lambda a, b: torch.cdist(a, b, p=p), [x1, x2]),
                           (lambda a: torch.nn.functional.pdist(a, p=p), [x2])):
            out, grads = _grads(fn, inputs, D, seed=2)
            cot = torch.randn(out.shape, generator=torch.Generator().manual_seed(2),
                              dtype=torch.float64)
            eps = 1e-6
            for k, grad in enumerate(grads):
                for i in range(inputs[k].numel()):
                    vals = []
                    for sign in (1, -1):
                        moved = [u.clone() for u in inputs]
                        moved[k].view(-1)[i] += sign * eps
                        vals.append((fn(*[u.to(D) for u in moved]).cpu() * cot).sum().item())
                    fd = (vals[0] - vals[1]) / (2 * eps)
                    assert abs(grad.cpu().reshape(-1)[i].item() - fd) < 1e-6 + 1e-5 * abs(fd)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16), ids=str)
def test_histc_matches_pytorch(td: object, dtype: "torch.dtype") -> None:
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(40, 7, generator=g, dtype=torch.float64) * 4).to(dtype)
    for bins, lo, hi in ((10, 0, 0), (7, -3, 3), (1, -1, 1), (100, -2.5, 5), (13, 0.1, 0.1)):
        want = torch.histc(x, bins=bins, min=lo, max=hi)
        _close(torch.histc(x.to(D), bins=bins, min=lo, max=hi), want, rtol=0, atol=0)
    # values on the edges: linspace's edges, the max itself, outside values
    edges = torch.linspace(-2, 2, 9, dtype=dtype)
    y = torch.cat([edges, edges[1:-1] + 1e-3, torch.tensor([-5.0, 5.0], dtype=dtype)])
    _close(torch.histc(y.to(D), bins=8, min=-2, max=2), torch.histc(y, bins=8, min=-2, max=2),
           rtol=0, atol=0)
    # non-contiguous input, a 0-d one and an empty one
    _close(torch.histc(x.to(D).t(), bins=5), torch.histc(x.t(), bins=5), rtol=0, atol=0)
    z = torch.tensor(2.5, dtype=dtype)
    _close(torch.histc(z.to(D), bins=4), torch.histc(z, bins=4), rtol=0, atol=0)
    e = torch.zeros(0, dtype=dtype)
    _close(torch.histc(e.to(D), bins=3), torch.histc(e, bins=3), rtol=0, atol=0)


def test_histc_nan_and_errors(td: object) -> None:
    x = torch.tensor([1.0, float("nan"), 2.0, 3.0])
    _close(torch.histc(x.to(D), bins=3, min=0, max=3), torch.histc(x, bins=3, min=0, max=3))
    with pytest.raises(Exception, match="not finite"):
        torch.histc(x.to(D), bins=3).cpu()  # the data's range holds NaN
    with pytest.raises(Exception, match="max must be larger than min"):
        torch.histc(x.to(D), bins=3, min=2, max=1).cpu()
    out = torch.empty(3, device=D)
    torch.histc(x.to(D), bins=3, min=0, max=3, out=out)
    _close(out, torch.histc(x, bins=3, min=0, max=3))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_histogram_matches_pytorch(td: object, dtype: "torch.dtype") -> None:
    """torch.histogram with a bin count (the data's range, a given one, an empty one) or a
    tensor of edges, with and without weights and density; values on the edges and outside."""
    g = torch.Generator().manual_seed(6)
    x = (torch.randn(9, 11, generator=g, dtype=torch.float64) * 3).to(dtype)
    w = torch.rand(9, 11, generator=g, dtype=torch.float64).to(dtype)
    edges = torch.linspace(-2, 2, 9, dtype=dtype)
    on_edges = torch.cat([edges, edges[1:-1] + 1e-3, torch.tensor([-9.0, 9.0, math.nan],
                                                                   dtype=dtype)])
    cases = [(x, dict(bins=7)), (x, dict(bins=1)), (x, dict(bins=20, range=(-1.0, 2.5))),
             (x, dict(bins=4, range=(0.5, 0.5))), (on_edges, dict(bins=8, range=(-2.0, 2.0))),
             (torch.full((5,), 2.0, dtype=dtype), dict(bins=3)), (torch.zeros(0, dtype=dtype),
                                                                  dict(bins=3)),
             (torch.tensor(1.5, dtype=dtype), dict(bins=2))]
    for t, kw in cases:
        for weighted, density in ((False, False), (True, False), (False, True), (True, True)):
            wt = w.reshape(-1)[:t.numel()].reshape(t.shape) if weighted else None
            want = torch.histogram(t, weight=wt, density=density, **kw)
            got = torch.histogram(t.to(D), weight=None if wt is None else wt.to(D),
                                  density=density, **kw)
            _close(got.bin_edges, want.bin_edges, rtol=0, atol=0)
            _close(got.hist, want.hist)
    bins = torch.tensor([-3.0, -1.0, 0.0, 0.5, 4.0], dtype=dtype)
    for t in (x, on_edges):
        for weighted, density in ((False, False), (True, True)):
            wt = w.reshape(-1)[:t.numel()].reshape(t.shape) if weighted else None
            want = torch.histogram(t, bins, weight=wt, density=density)
            got = torch.histogram(t.to(D), bins.to(D), weight=None if wt is None else wt.to(D),
                                  density=density)
            _close(got.bin_edges, want.bin_edges, rtol=0, atol=0)
            _close(got.hist, want.hist)
    with pytest.raises(RuntimeError, match="not finite"):
        torch.histogram(on_edges.to(D), bins=3)  # the data's range holds NaN
