"""avg_pool2d and avg_pool3d in every form PyTorch has (ceil_mode, count_include_pad,
divisor_override of either sign; batched and unbatched; non-contiguous input; float32, float64,
int64, and bfloat16 where CPU PyTorch has it: not avg_pool3d) and adaptive_avg_pool3d on the tensord device, all on the daemon (conftest's
``no_fallback``): values and gradients against CPU PyTorch (finite differences:
test_adaptive_max_pool.py's ``test_gradients_match_finite_differences``)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.int64]

# (input shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
# OpInfo's avg_pool2d samples and an unbatched one.
AVG2D = [((1, 3, 9, 9), 3, 1, 1, True, False, 2),
         ((1, 3, 9, 9), (4, 4), (2, 3), 1, True, False, 2),
         ((1, 3, 9, 9), (6, 6), (3, 3), (2, 3), True, True, 2),
         ((2, 3, 9, 9), (3, 3), (1, 1), (1,), True, False, 2),
         ((1, 1, 4, 4), (2, 2), (), (0,), False, True, -2),
         ((1, 2, 6, 6), (4, 4), (2, 2), (2,), True, True, None),
         ((3, 7, 8), (3, 2), (2, 1), (1, 1), False, False, -3)]
# OpInfo's avg_pool3d samples (the empty batch too) and an unbatched one.
AVG3D = [((2, 3, 3, 4, 4), (2, 2, 2), None, 0, False, True, None),
         ((1, 2, 4, 4, 4), 2, 1, 1, True, False, 2),
         ((1, 2, 5, 5, 5), (2, 3, 4), (1, 2, 2), (0, 1, 2), True, True, 2),
         ((1, 2, 5, 5, 5), (2, 3, 4), (1, 2, 2), (0, 1, 2), False, True, None),
         ((1, 1, 7, 5, 7), (6, 3, 4), (2, 3, 2), (3, 1, 0), False, False, 2),
         ((1, 1, 4, 5, 4), (2, 2, 3), (2, 2, 1), 0, False, True, -2),
         ((1, 1, 6, 5, 6), (4, 5, 6), (2, 3, 2), 2, True, True, None),
         ((0, 1, 4, 5, 4), (2, 3, 1), (2, 1, 2), 0, False, True, None),
         ((3, 5, 4, 6), 3, 2, 1, True, False, -4)]


def _input(shape: tuple, dtype: torch.dtype, seed: int = 3) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.int64:
        return torch.randint(-20, 20, shape, generator=g)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def _noncontiguous(x: torch.Tensor) -> torch.Tensor:
    """x's values on the device, held transposed in memory."""
    return x.transpose(0, -1).contiguous().to(D).transpose(0, -1)


def _check(fn: object, x: torch.Tensor, *args: object) -> None:
    want = fn(x, *args)
    for xd in (x.to(D), _noncontiguous(x)):
        got = fn(xd, *args)
        assert got.device.type == D and got.dtype == want.dtype and got.shape == want.shape
        if x.dtype == torch.bfloat16:  # the daemon sums in float32 and rounds once
            torch.testing.assert_close(got.cpu().float(), want.float(), rtol=2e-2, atol=2e-2)
        else:
            torch.testing.assert_close(got.cpu(), want)
    if x.dtype in (torch.float32, torch.float64) and x.numel() > 0:
        w = torch.randn(want.shape, generator=torch.Generator().manual_seed(4), dtype=x.dtype)
        xr, xd = x.clone().requires_grad_(), x.to(D).requires_grad_()
        (fn(xr, *args) * w).sum().backward()
        (fn(xd, *args) * w.to(D)).sum().backward()
        torch.testing.assert_close(xd.grad.cpu(), xr.grad)


@pytest.mark.parametrize("form", AVG2D, ids=repr)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_avg_pool2d_forms(td: object, form: tuple, dtype: torch.dtype) -> None:
    shape, *args = form
    _check(F.avg_pool2d, _input(shape, dtype), *args)


@pytest.mark.parametrize("form", AVG3D, ids=repr)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64], ids=str)
def test_avg_pool3d_forms(td: object, form: tuple, dtype: torch.dtype) -> None:
    shape, *args = form
    _check(F.avg_pool3d, _input(shape, dtype), *args)


@pytest.mark.parametrize("shape,size", [((0, 8, 8, 8, 8), (5, 7, 4)), ((1, 8, 4, 3, 7), 1),
                                        ((3, 3, 8, 8, 6), (5, 7, None)),
                                        ((3, 8, 8, 6), (5, None, 2)),
                                        ((2, 3, 3, 4, 5), (7, 5, 9))], ids=repr)
@pytest.mark.parametrize("dtype", DTYPES[:3], ids=str)
def test_adaptive_avg_pool3d(td: object, shape: tuple, size: object, dtype: torch.dtype) -> None:
    _check(F.adaptive_avg_pool3d, _input(shape, dtype), size)
