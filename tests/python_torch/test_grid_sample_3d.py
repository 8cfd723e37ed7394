"""grid_sampler_3d and its backward on the tensord device (the daemon's rows of the same
names): F.grid_sample of volumes against CPU PyTorch in both interpolation modes (bilinear is
trilinear; PyTorch has no bicubic in 3-d), every padding mode, with and without align_corners,
float32 and float64, grid points outside [-1, 1]; the input and grid gradients through autograd
and aten.grid_sampler_3d_backward with both output masks; a float64 gradcheck (finite
differences); no op on the CPU fallback (conftest's autouse check)."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"
aten = torch.ops.aten
MODES = ["bilinear", "nearest"]
PADDINGS = ["zeros", "border", "reflection"]


def _inputs(dtype: object, seed: int = 0) -> tuple:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, 4, 5, 6, generator=g, dtype=dtype)
    grid = torch.rand(2, 3, 2, 4, 3, generator=g, dtype=dtype) * 2.8 - 1.4  # some outside
    return x, grid


def _run(device: str, x: torch.Tensor, grid: torch.Tensor, **kw: object) -> tuple:
    xd = x.to(device).requires_grad_()
    gd = grid.to(device).requires_grad_()
    out = F.grid_sample(xd, gd, **kw)
    cot = torch.linspace(-1, 2, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * cot.to(device)).sum().backward()
    return out.cpu(), xd.grad.cpu(), gd.grad.cpu()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode,padding", list(itertools.product(MODES, PADDINGS)))
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_3d_matches_pytorch(td: object, dtype: object, mode: str, padding: str,
                                        align_corners: bool) -> None:
    x, grid = _inputs(dtype)
    kw = dict(mode=mode, padding_mode=padding, align_corners=align_corners)
    for got, want in zip(_run(D, x, grid, **kw), _run("cpu", x, grid, **kw)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_backward_output_mask_and_strided_operands(td: object) -> None:
    x, grid = _inputs(torch.float32, seed=1)
    grad = torch.randn(2, 3, 3, 2, 4)
    xt = x.transpose(3, 4).contiguous().transpose(3, 4)  # same values, strided
    for mask in ([True, True], [False, True]):
        want = aten.grid_sampler_3d_backward(grad, x, grid, 0, 2, False, mask)
        got = aten.grid_sampler_3d_backward(grad.to(D), xt.to(D), grid.to(D), 0, 2, False, mask)
        assert (got[0] is None) == (not mask[0])
        if mask[0]:
            torch.testing.assert_close(got[0].cpu(), want[0], rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(got[1].cpu(), want[1], rtol=1e-4, atol=1e-4)


def test_float64_gradcheck(td: object) -> None:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(1, 2, 3, 3, 4, generator=g, dtype=torch.float64).to(D).requires_grad_()
    grid = (torch.rand(1, 2, 2, 3, 3, generator=g, dtype=torch.float64) * 1.8 - 0.9).to(D)
    grid.requires_grad_()
    assert torch.autograd.gradcheck(
        lambda a, b: F.grid_sample(a, b, padding_mode="border", align_corners=False), (x, grid))
