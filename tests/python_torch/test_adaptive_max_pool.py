"""Adaptive max pooling and max_pool3d's gradient on the tensord device, all on the daemon
(conftest's ``no_fallback``), against CPU PyTorch: values and int64 indices exactly (PyTorch's
windows [floor(i in / out), ceil((i + 1) in / out)), ties to the first maximum, NaN
propagating) on data with ties and NaNs, non-divisible sizes, outputs larger than the input,
batched and unbatched, non-contiguous input, float32/float64/bfloat16; gradients against CPU
PyTorch and, in float64, against central differences taken on the device (the average pools'
too: test_avg_pools.py has their other cases)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = pytest.importorskip("torch.nn")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"

# (input shape, output_size): 2-d then 3-d pools.
SIZES_2D = [((2, 3, 7, 11), (4, 5)), ((3, 4, 10), (8, 5)), ((2, 3, 9, 9), (3, 3)),
            ((1, 4, 4, 3), (3, None)), ((2, 3, 6, 5), 1), ((3, 5, 2), (5, 7))]
SIZES_3D = [((3, 3, 4, 4, 6), (2, 3, None)), ((3, 4, 3, 5), (5, 2, 7)),
            ((1, 2, 6, 6, 6), 2), ((2, 3, 5, 4, 7), (3, 2, 4))]


def _input(data: str, shape: tuple, dtype: torch.dtype = torch.float32,
           seed: int = 5) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    if data != "random":  # values from {-2, ..., 2}: ties in every window
        x = x.mul(1.2).round().clamp(-2, 2)
    if data == "nans":
        x.view(-1)[3::7] = float("nan")
    return x.to(dtype)


def _exactly(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.device.type == D and got.dtype == want.dtype
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True)


def _noncontiguous(x: torch.Tensor) -> torch.Tensor:
    """x's values on the device, held transposed in memory."""
    return x.transpose(0, -1).contiguous().to(D).transpose(0, -1)


def _adaptive(dim: int) -> object:
    return F.adaptive_max_pool2d if dim == 2 else F.adaptive_max_pool3d


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("data", ["ties", "nans", "random"])
@pytest.mark.parametrize("dim,shape,size",
                         [(2, *s) for s in SIZES_2D] + [(3, *s) for s in SIZES_3D])
def test_adaptive_max_pool_values_and_indices(td: object, dim: int, shape: tuple, size: object,
                                              data: str, dtype: torch.dtype) -> None:
    x = _input(data, shape, dtype)
    y, idx = _adaptive(dim)(x, size, return_indices=True)
    for xd in (x.to(D), _noncontiguous(x)):
        yd, idxd = _adaptive(dim)(xd, size, return_indices=True)
        _exactly(yd, y)
        _exactly(idxd, idx)
        _exactly(_adaptive(dim)(xd, size), y)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("dim,shape,size",
                         [(2, *s) for s in SIZES_2D] + [(3, *s) for s in SIZES_3D])
def test_adaptive_max_pool_gradients(td: object, dim: int, shape: tuple, size: object,
                                     dtype: torch.dtype) -> None:
    # Ties: an element the maximum of several (overlapping or repeated) windows.
    x = _input("ties", shape, dtype)
    w = torch.randn(_adaptive(dim)(x, size).shape, generator=torch.Generator().manual_seed(6),
                    dtype=dtype)
    xr, xd = x.clone().requires_grad_(), x.to(D).requires_grad_()
    (_adaptive(dim)(xr, size) * w).sum().backward()
    (_adaptive(dim)(xd, size) * w.to(D)).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xr.grad)


def _central_differences(loss: object, x: torch.Tensor, count: int = 10,
                         eps: float = 1e-6) -> torch.Tensor:
    """d loss / d x at x's first `count` elements (float64, loss evaluated on the device)."""
    fd = torch.zeros(count, dtype=torch.float64)
    for i in range(count):
        plus, minus = x.clone(), x.clone()
        plus.view(-1)[i] += eps
        minus.view(-1)[i] -= eps
        fd[i] = (loss(plus.to(D)).cpu() - loss(minus.to(D)).cpu()) / (2 * eps)
    return fd


@pytest.mark.parametrize("name", ["adaptive_max_pool2d", "adaptive_max_pool3d", "max_pool3d",
                                  "avg_pool2d", "avg_pool3d", "adaptive_avg_pool3d"])
def test_gradients_match_finite_differences(td: object, name: str) -> None:
    g = torch.Generator().manual_seed(9)
    if name == "adaptive_max_pool2d":
        x = torch.randn(2, 3, 7, 5, generator=g, dtype=torch.float64)
        fn = lambda t: F.adaptive_max_pool2d(t, (3, 4))  # noqa: E731
    elif name == "adaptive_max_pool3d":
        x = torch.randn(2, 3, 4, 5, dtype=torch.float64, generator=g)
        fn = lambda t: F.adaptive_max_pool3d(t, (3, 2, 4))  # noqa: E731
    elif name == "max_pool3d":
        x = torch.randn(1, 2, 5, 4, 6, dtype=torch.float64, generator=g)
        fn = lambda t: F.max_pool3d(t, 3, stride=2, padding=1, ceil_mode=True)  # noqa: E731
    elif name == "avg_pool2d":
        x = torch.randn(1, 2, 7, 6, dtype=torch.float64, generator=g)
        fn = lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True,  # noqa: E731
                                    count_include_pad=False, divisor_override=-3)
    elif name == "avg_pool3d":
        x = torch.randn(2, 5, 4, 6, dtype=torch.float64, generator=g)
        fn = lambda t: F.avg_pool3d(t, (2, 3, 2), (1, 2, 2), (1, 1, 0),  # noqa: E731
                                    ceil_mode=True, count_include_pad=False)
    else:
        x = torch.randn(1, 2, 5, 4, 7, dtype=torch.float64, generator=g)
        fn = lambda t: F.adaptive_avg_pool3d(t, (3, 2, 4))  # noqa: E731
    w = torch.randn(fn(x).shape, generator=g, dtype=torch.float64).to(D)

    def loss(t: torch.Tensor) -> torch.Tensor:
        return (fn(t) * w).sum()

    xd = x.to(D).requires_grad_()
    loss(xd).backward()
    fd = _central_differences(loss, x)
    torch.testing.assert_close(xd.grad.cpu().view(-1)[:fd.numel()], fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("geometry", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                      dict(kernel_size=(2, 3, 2), stride=1, dilation=(2, 1, 1),
                                           ceil_mode=True),
                                      dict(kernel_size=3, stride=2, ceil_mode=True)], ids=repr)
@pytest.mark.parametrize("shape", [(2, 3, 6, 7, 5), (3, 5, 6, 7)], ids=["5d", "4d"])
def test_max_pool3d_gradient(td: object, shape: tuple, geometry: dict,
                             dtype: torch.dtype) -> None:
    # Random data (no ties): the forward is PyTorch's decomposition on the device, the backward
    # (max_pool3d_with_indices_backward) the daemon's row.
    x = _input("random", shape, dtype)
    w = torch.randn(F.max_pool3d(x, **geometry).shape, generator=torch.Generator().manual_seed(6),
                    dtype=dtype)
    xr, xd = x.clone().requires_grad_(), x.to(D).requires_grad_()
    (F.max_pool3d(xr, **geometry) * w).sum().backward()
    (F.max_pool3d(xd, **geometry) * w.to(D)).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xr.grad)


def test_adaptive_max_pool1d_and_modules(td: object) -> None:
    x = _input("ties", (2, 3, 11))
    y, idx = F.adaptive_max_pool1d(x, 4, return_indices=True)
    yd, idxd = F.adaptive_max_pool1d(x.to(D), 4, return_indices=True)
    _exactly(yd, y)
    _exactly(idxd, idx)
    pool = nn.AdaptiveMaxPool2d((3, 5), return_indices=True)
    x = _input("random", (2, 3, 8, 9))
    xr, xd = x.clone().requires_grad_(), x.to(D).requires_grad_()
    (yr, ir), (yd, idd) = pool(xr), pool(xd)
    _exactly(yd.detach(), yr.detach())
    _exactly(idd, ir)
    yr.pow(2).sum().backward()
    yd.pow(2).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xr.grad)
