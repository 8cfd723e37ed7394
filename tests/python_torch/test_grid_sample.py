"""grid_sampler_2d's backward on the tensord device (the daemon's grid_sampler_2d_backward row;
the forward is PyTorch's decomposition on the device's ops): aten.grid_sampler_2d_backward
against CPU PyTorch in every interpolation and padding mode, with and without align_corners,
both output masks, float32 and float64, non-contiguous operands; F.grid_sample's input and grid
gradients through autograd; a float64 gradcheck (finite differences); no op on the CPU fallback
(conftest's autouse check)."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"
aten = torch.ops.aten
MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


def _inputs(dtype: object, seed: int = 0) -> tuple:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, 5, 6, generator=g, dtype=dtype)
    grid = torch.rand(2, 4, 7, 2, generator=g, dtype=dtype) * 2.8 - 1.4  # some outside [-1, 1]
    grad = torch.randn(2, 3, 4, 7, generator=g, dtype=dtype)
    return grad, x, grid


def _close(got: object, want: object) -> None:
    if want is None:
        assert got is None
    else:
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode,padding", list(itertools.product(MODES.values(),
                                                                PADDINGS.values())))
@pytest.mark.parametrize("align_corners", [False, True])
def test_backward_matches_pytorch(td: object, dtype: object, mode: int, padding: int,
                                  align_corners: bool) -> None:
    grad, x, grid = _inputs(dtype)
    for mask in ([True, True], [False, True]):
        want = aten.grid_sampler_2d_backward(grad, x, grid, mode, padding, align_corners, mask)
        got = aten.grid_sampler_2d_backward(grad.to(D), x.to(D), grid.to(D), mode, padding,
                                            align_corners, mask)
        _close(got[0], want[0] if mask[0] else None)
        _close(got[1], want[1])


def test_non_contiguous_operands(td: object) -> None:
    grad, x, grid = _inputs(torch.float32, seed=1)
    xt = x.transpose(2, 3).contiguous().transpose(2, 3)  # same values, strided
    gridt = grid.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
    want = aten.grid_sampler_2d_backward(grad, x, grid, 0, 2, False, [True, True])
    got = aten.grid_sampler_2d_backward(grad.to(D), xt.to(D), gridt.to(D), 0, 2, False,
                                        [True, True])
    _close(got[0], want[0])
    _close(got[1], want[1])


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("padding", list(PADDINGS))
def test_grid_sample_autograd(td: object, mode: str, padding: str) -> None:
    _, x, grid = _inputs(torch.float32, seed=2)
    kw = dict(mode=mode, padding_mode=padding, align_corners=False)
    xr, gr = x.clone().requires_grad_(), grid.clone().requires_grad_()
    ref = F.grid_sample(xr, gr, **kw)
    ref.square().sum().backward()
    xd, gd = x.to(D).requires_grad_(), grid.to(D).requires_grad_()
    out = F.grid_sample(xd, gd, **kw)
    out.square().sum().backward()
    _close(out.detach(), ref.detach())
    _close(xd.grad, xr.grad)
    _close(gd.grad, gr.grad)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_float64_gradcheck(td: object, mode: str) -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1, 2, 4, 5, generator=g, dtype=torch.float64).to(D).requires_grad_()
    # inside the image, away from pixel boundaries (where the gradient jumps)
    grid = (torch.rand(1, 3, 3, 2, generator=g, dtype=torch.float64) * 1.4 - 0.7)
    grid = grid.to(D).requires_grad_()
    fn = lambda x, grid: F.grid_sample(x, grid, mode=mode, padding_mode="border",  # noqa: E731
                                       align_corners=True)
    # fast_mode: PyTorch's projected check (v^T J u against finite differences along a random
    # u; what its own OpInfo gradchecks use for slow ops). The whole Jacobian is ~130 forward
    # and backward passes of bicubic's decomposition: 49 s of the suite on the ASan daemon.
    assert torch.autograd.gradcheck(fn, (x, grid), eps=1e-6, atol=1e-5, rtol=1e-4,
                                    fast_mode=True)
