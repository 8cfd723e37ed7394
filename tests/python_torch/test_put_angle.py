"""torch.put (put_ and Tensor.put: ``scatter``/``scatter_add`` on the daemon), torch.angle of
real tensors and torch.allclose on the daemon (no CPU fallback) with PyTorch's values, errors
and gradients."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


def _same(got: "torch.Tensor", want: "torch.Tensor") -> None:
    assert got.device.type == D and got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, equal_nan=True)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.int64, torch.bfloat16),
                         ids=str)
def test_put_matches_pytorch(td: object, dtype: "torch.dtype") -> None:
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(3, 4, generator=g) * 5).to(dtype)
    index = torch.tensor([[0, -1], [5, -11]])  # negative positions count from the end
    source = (torch.randn(2, 2, generator=g) * 5).to(dtype)
    for accumulate in (False, True):
        _same(x.to(D).put(index.to(D), source.to(D), accumulate=accumulate),
              x.put(index, source, accumulate=accumulate))
        y = x.to(D)
        y.put_(index.to(D), source.to(D), accumulate=accumulate)
        _same(y, x.clone().put_(index, source, accumulate=accumulate))
    repeated = torch.tensor([1, 1, 1])  # accumulate sums the repeats
    src3 = torch.ones(3, dtype=dtype)
    _same(x.to(D).put(repeated.to(D), src3.to(D), accumulate=True),
          x.put(repeated, src3, accumulate=True))
    # a non-contiguous self, a 0-d one, an empty index
    _same(x.to(D).t().put(index.to(D), source.to(D)), x.t().put(index, source))
    z = torch.tensor(3.0).to(dtype)
    _same(z.to(D).put(torch.tensor([0]).to(D), torch.ones(1, dtype=dtype).to(D)),
          z.put(torch.tensor([0]), torch.ones(1, dtype=dtype)))
    empty = torch.zeros(0, dtype=torch.int64)
    _same(x.to(D).put(empty.to(D), torch.zeros(0, dtype=dtype).to(D)),
          x.put(empty, torch.zeros(0, dtype=dtype)))


def test_put_errors_and_gradients(td: object) -> None:
    x = torch.zeros(2, 3, device=D)
    with pytest.raises(Exception):  # out of range either way
        x.put(torch.tensor([6], device=D), torch.ones(1, device=D)).cpu()
    with pytest.raises(Exception):
        x.put(torch.tensor([-7], device=D), torch.ones(1, device=D)).cpu()
    with pytest.raises(RuntimeError, match="same number of elements"):
        x.put(torch.tensor([0, 1], device=D), torch.ones(3, device=D))
    g = torch.Generator().manual_seed(3)
    base, src = torch.randn(3, 4, generator=g), torch.randn(2, 2, generator=g)
    index = torch.tensor([[1, -2], [7, 3]])
    cot = torch.randn(3, 4, generator=g)
    for accumulate in (False, True):
        grads = []
        for dev in ("cpu", D):
            a = base.to(dev).requires_grad_()
            s = src.to(dev).requires_grad_()
            out = a.put(index.to(dev), s, accumulate=accumulate)
            grads.append(torch.autograd.grad(out, (a, s), cot.to(dev)))
        for got, want in zip(grads[1], grads[0]):
            _same(got, want)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.bool), ids=str)
def test_angle_of_real_tensors(td: object, dtype: "torch.dtype") -> None:
    x = torch.tensor([-2.5, -0.0, 0.0, 3.0, -math.inf, math.inf, math.nan, -1.0])
    if not dtype.is_floating_point:
        x = torch.tensor([-3, 0, 2, -1]).to(dtype)
    x = x.to(dtype)
    _same(torch.angle(x.to(D)), torch.angle(x))
    _same(torch.angle(x.to(D).reshape(-1, 2).t()), torch.angle(x.reshape(-1, 2).t()))
    if dtype.is_floating_point:
        a = x.to(D).requires_grad_()
        (grad,) = torch.autograd.grad(torch.angle(a).sum(), a)
        _same(grad, torch.zeros_like(x))


def test_allclose(td: object) -> None:
    a = torch.tensor([1.0, 2.0, math.nan, math.inf])
    for b, kw in ((a + 1e-9, {}), (a + 1e-3, {}), (a.clone(), {"equal_nan": True}),
                  (a + 0.5, {"atol": 1.0}), (a * 1.01, {"rtol": 0.1, "equal_nan": True})):
        assert torch.allclose(a.to(D), b.to(D), **kw) == torch.allclose(a, b, **kw)
