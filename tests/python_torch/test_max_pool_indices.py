"""max_pool2d's indices on the tensord device: ``nn.MaxPool2d(return_indices=True)``,
``nn.MaxUnpool2d`` and their gradients against CPU PyTorch, on data with ties and NaNs, for
padded, dilated and ceil-mode windows, batched and unbatched, and ``max_pool1d``'s indices (a
unit-height max_pool2d), all on the daemon (conftest's autouse check: no CPU fallback)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = pytest.importorskip("torch.nn")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"

GEOMETRIES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=1, padding=1, dilation=2, ceil_mode=True),
]


def _input(data: str, shape: tuple, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    if data != "random":  # values from {-2, ..., 2}: ties in every window
        x = x.mul(1.2).round().clamp(-2, 2)
    if data == "nans":
        x.view(-1)[3::7] = float("nan")
    return x.to(dtype)


def _exactly(got: torch.Tensor, want: torch.Tensor) -> None:
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True)


def _unpool(y: torch.Tensor, idx: torch.Tensor, size: tuple) -> torch.Tensor:
    """max_unpool2d to the pooled input's size (the ATen op: F.max_unpool2d refuses sizes that
    dilated or ceil-mode windows give)."""
    return torch.ops.aten.max_unpool2d(y, idx, list(size))


@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 7, 6)], ids=["4d", "3d"])
@pytest.mark.parametrize("data", ["ties", "nans", "random"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=repr)
def test_pool_indices_and_unpool_match_cpu(td: object, geometry: dict, data: str,
                                           shape: tuple) -> None:
    x = _input(data, shape)
    pool = nn.MaxPool2d(**geometry, return_indices=True)
    y, idx = pool(x)
    yd, idxd = pool(x.to(D))
    assert idxd.dtype == torch.int64 and idxd.device.type == D
    _exactly(yd, y)
    _exactly(idxd, idx)
    _exactly(_unpool(yd, idxd, x.shape[-2:]), _unpool(y, idx, x.shape[-2:]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=repr)
def test_pool_and_unpool_gradients_match_cpu(td: object, geometry: dict,
                                             dtype: torch.dtype) -> None:
    # Overlapping windows send several gradients to one element; unpooling's gradient gathers
    # at the indices (the indices' own gradient is none).
    x = _input("ties", (2, 3, 9, 8), dtype)
    g = torch.Generator().manual_seed(6)

    def loss(x: torch.Tensor, w_pool: torch.Tensor, w_unpool: torch.Tensor) -> torch.Tensor:
        y, idx = F.max_pool2d(x, **geometry, return_indices=True)
        return (y * w_pool).sum() + (_unpool(y, idx, x.shape[-2:]) * w_unpool).sum()

    pooled = F.max_pool2d(x, **geometry)
    w_pool = torch.randn(pooled.shape, generator=g, dtype=dtype)
    w_unpool = torch.randn(x.shape, generator=g, dtype=dtype)
    xr = x.clone().requires_grad_()
    loss(xr, w_pool, w_unpool).backward()
    xd = x.to(D).requires_grad_()
    loss(xd, w_pool.to(D), w_unpool.to(D)).backward()
    torch.testing.assert_close(xd.grad.cpu(), xr.grad)


def test_max_pool2d_and_max_unpool2d_modules(td: object) -> None:
    pool = nn.MaxPool2d(2, stride=2, return_indices=True)
    unpool = nn.MaxUnpool2d(2, stride=2)
    x = _input("ties", (2, 3, 8, 6))
    xr, xd = x.clone().requires_grad_(), x.to(D).requires_grad_()
    zr, zd = unpool(*pool(xr)), unpool(*pool(xd))
    _exactly(zd.detach(), zr.detach())
    w = torch.randn(zr.shape, generator=torch.Generator().manual_seed(8))
    (zr * w).sum().backward()
    (zd * w.to(D)).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xr.grad)


def test_max_pool2d_training_path_matches_cpu(td: object) -> None:
    # F.max_pool2d without indices: PyTorch's autograd still saves them and its backward sends
    # the gradient there (max_pool2d_with_indices_backward on the daemon).
    x = _input("ties", (2, 4, 8, 8))
    xr, xd = x.clone().requires_grad_(), x.to(D).requires_grad_()
    F.max_pool2d(xr, 3, 2, 1).pow(2).sum().backward()
    F.max_pool2d(xd, 3, 2, 1).pow(2).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xr.grad)


def test_max_pool1d_indices_match_cpu(td: object) -> None:
    x = _input("ties", (2, 3, 11))
    y, idx = F.max_pool1d(x, 3, 2, 1, return_indices=True)
    yd, idxd = F.max_pool1d(x.to(D), 3, 2, 1, return_indices=True)
    _exactly(yd, y)
    _exactly(idxd, idx)
