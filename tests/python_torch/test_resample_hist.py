"""F.bilinear, antialiased F.interpolate and torch.histogramdd on the tensord device (the
daemon's _trilinear composite, _upsample_bilinear2d_aa with its backward and the three
histogramdd rows) against CPU PyTorch: bilinear with and without bias, batched inputs, every
input's gradient (PyTorch's formula calls _trilinear again); antialiased resizing down and up by
size or scale factor, align_corners, gradients; histograms from bin counts (range, weights,
density) and from edge tensors; float64 gradchecks; no op on the CPU fallback (conftest's
autouse check)."""

from __future__ import annotations

from typing import Any, Callable, List

import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"


def _run(fn: Callable[..., Any], tensors: List[torch.Tensor], device: str) -> tuple:
    leaves = [t.detach().to(device).requires_grad_(t.is_floating_point()) for t in tensors]
    out = fn(*leaves)
    cot = torch.linspace(-1, 2, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * cot.to(device)).sum().backward()
    return [out.cpu()] + [t.grad.cpu() for t in leaves if t.requires_grad]


def _compare(fn: Callable[..., Any], *tensors: torch.Tensor) -> None:
    for got, want in zip(_run(fn, list(tensors), D), _run(fn, list(tensors), "cpu")):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("batch", [(5,), (2, 3)])
def test_bilinear(td: object, bias: bool, batch: tuple) -> None:
    g = torch.Generator().manual_seed(len(batch))
    x1, x2 = torch.randn(*batch, 3, generator=g), torch.randn(*batch, 4, generator=g)
    w, b = torch.randn(6, 3, 4, generator=g), torch.randn(6, generator=g)
    if bias:
        _compare(F.bilinear, x1, x2, w, b)
    else:
        _compare(F.bilinear, x1, x2, w)


@pytest.mark.parametrize("size,align", [((3, 5), False), ((13, 4), True), ((7, 7), False)])
def test_interpolate_antialias_by_size(td: object, size: tuple, align: bool) -> None:
    x = torch.randn(2, 3, 9, 10, generator=torch.Generator().manual_seed(1))
    _compare(lambda t: F.interpolate(t, size=size, mode="bilinear", antialias=True,
                                     align_corners=align), x)


@pytest.mark.parametrize("scale", [0.45, (1.7, 0.6)])
def test_interpolate_antialias_by_scale(td: object, scale: Any) -> None:
    x = torch.randn(1, 2, 11, 8, generator=torch.Generator().manual_seed(2))
    _compare(lambda t: F.interpolate(t, scale_factor=scale, mode="bilinear", antialias=True), x)


def _hist_pair(device: str, x: torch.Tensor, bins: Any, **kw: Any) -> tuple:
    kw = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    if isinstance(bins, list) and bins and isinstance(bins[0], torch.Tensor):
        bins = [b.to(device) for b in bins]
    h = torch.histogramdd(x.to(device), bins, **kw)
    return h.hist.cpu(), [e.cpu() for e in h.bin_edges]


@pytest.mark.parametrize("density", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogramdd(td: object, density: bool, weighted: bool) -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 25, 3, generator=g)
    w = torch.rand(4, 25, generator=g) if weighted else None
    edges = [torch.sort(torch.randn(n, generator=g) * 2).values for n in (4, 2, 5)]
    for bins, kw in (([3, 2, 4], {}), (5, {"range": [-1.0, 1.0, 0.0, 2.0, -2.0, 0.5]}),
                     (edges, {})):
        got = _hist_pair(D, x, bins, weight=w, density=density, **kw)
        want = _hist_pair("cpu", x, bins, weight=w, density=density, **kw)
        torch.testing.assert_close(got[0], want[0], rtol=1e-5, atol=1e-6, equal_nan=True)
        for a, b in zip(got[1], want[1]):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_float64_gradcheck(td: object) -> None:
    g = torch.Generator().manual_seed(4)
    x1, x2 = (torch.randn(3, n, generator=g, dtype=torch.float64).to(D).requires_grad_()
              for n in (2, 3))
    w = torch.randn(4, 2, 3, generator=g, dtype=torch.float64).to(D).requires_grad_()
    assert torch.autograd.gradcheck(F.bilinear, (x1, x2, w))
    img = torch.randn(1, 2, 7, 6, generator=g, dtype=torch.float64).to(D).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda t: F.interpolate(t, size=(3, 9), mode="bilinear", antialias=True), (img,))
