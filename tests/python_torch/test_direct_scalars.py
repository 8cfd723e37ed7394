"""Note [Direct calls] (tensord/torch/_direct.py) for CPU scalar tensors and numbers in lists:
a 0-dim CPU tensor acts as its value, which no argument key holds, so each replayed call must
take it from the call itself. Each case runs an op several times with a new scalar (the third
call onwards may take the recorded Call) and compares every result with local PyTorch."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import recorded

torch = pytest.importorskip("torch")
F = torch.nn.functional

D = "tensord"
VALUES = (2.0, -0.5, 3.25, 0.0, 7.0, -3.0, 2.0)

# (the op on (x, y, s), with s a 0-dim CPU tensor; whether the recorded Call must be taken)
SCALAR_CASES = {
    "mul": (lambda x, y, s: x * s, True),
    "rmul": (lambda x, y, s: s * x, True),
    "add": (lambda x, y, s: x + s, True),
    "sub_from": (lambda x, y, s: s - x, True),
    "div": (lambda x, y, s: x / (s + 10.0), False),  # (s + 10.0 is a CPU op)
    "maximum": (lambda x, y, s: torch.maximum(x, s), True),
    "where": (lambda x, y, s: torch.where(x > 0, x, s), True),
    "lerp": (lambda x, y, s: torch.lerp(x, y, s / 8), False),
    "add_alpha": (lambda x, y, s: torch.add(x, s, alpha=2), False),
    "mul_": (lambda x, y, s: x.clone().mul_(s), True),
}


@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_cpu_scalars_change_between_replays(production: Any, name: str, dtype: Any) -> None:
    fn, replayed = SCALAR_CASES[name]
    n = 30 + sorted(SCALAR_CASES).index(name)  # a shape of its own
    x, y = torch.randn(3, n), torch.randn(3, n)
    dx, dy = x.to(D), y.to(D)
    before = recorded(production)
    for v in VALUES:
        s = torch.tensor(v, dtype=dtype)
        want = fn(x, y, s)
        got = fn(dx, dy, s).cpu()
        assert got.dtype == want.dtype, (name, v)
        torch.testing.assert_close(got, want, msg=f"scalar {v}")
    if replayed and dtype is torch.float32:
        assert recorded(production) > before, "no call took the recorded path"


def test_integer_tensors_and_float_scalars(production: Any) -> None:
    x = torch.arange(12).reshape(3, 4)
    dx = x.to(D)
    for v in (2.5, 3, 0.5, -1.25, 4):  # the scalar's dtype (a key's part) decides the result's
        s = torch.tensor(v)
        want, got = x * s, (dx * s).cpu()
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


def test_scalar_gradients(production: Any) -> None:
    x0 = torch.randn(4, 3)
    for v in VALUES:
        s = torch.tensor(v)
        x, cx = x0.to(D).requires_grad_(), x0.clone().requires_grad_()
        ((x * s + s) ** 2).sum().backward()
        ((cx * s + s) ** 2).sum().backward()
        torch.testing.assert_close(x.grad.cpu(), cx.grad, msg=f"scalar {v}")


# Ops whose value may be a CPU scalar tensor beside a device's tensors, as PyTorch's CUDA
# kernels allow: masked_fill's reference checks the device by name (so its meta function gets a
# meta scalar), index_fill runs as PyTorch's decomposition (which gets the scalar on the device).
VALUE_CASES = {
    "masked_fill": lambda x, s: x.masked_fill(x > 0, s),
    "masked_fill_": lambda x, s: x.clone().masked_fill_(x < 0, s),
    "index_fill": lambda x, s: x.index_fill(1, torch.tensor([0, 2], device=x.device), s),
    "index_fill_": lambda x, s: x.clone().index_fill_(0, torch.tensor([1], device=x.device), s),
}


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_cpu_scalar_values(td: Any, name: str) -> None:
    fn = VALUE_CASES[name]
    x = torch.randn(3, 5)
    for v in (2.0, -0.5):
        s = torch.tensor(v)
        torch.testing.assert_close(fn(x.to(D), s).cpu(), fn(x, s), msg=f"value {v}")


# Numbers in lists: every op taking one is not pointwise (no pointwise ATen overload takes a
# number list), so the key holds the list's values, and a new list is a new key.
LIST_CASES = {
    "pad": lambda x, k, i: F.pad(x, [i, 1, 0, i], value=k),
    "interpolate": lambda x, k, i: F.interpolate(x[None, None], mode="nearest",
                                                 scale_factor=[1.0, float(i + 1)])[0, 0],
    "tile": lambda x, k, i: x.tile([i + 1, 1]) * k,
    "view": lambda x, k, i: x.reshape([-1, 2 * (i + 1)]) + k,
    "sum_dims": lambda x, k, i: x.sum([0, 1][: i + 1]) * k,
}


@pytest.mark.parametrize("name", sorted(LIST_CASES))
def test_lists_of_numbers_change_between_calls(production: Any, name: str) -> None:
    fn = LIST_CASES[name]
    x = torch.randn(4, 6)
    dx = x.to(D)
    for k, i in ((0.5, 0), (1.5, 1), (-2.0, 0), (0.5, 1), (3.0, 2), (1.5, 0), (0.5, 2)):
        torch.testing.assert_close(fn(dx, k, i).cpu(), fn(x, k, i), msg=f"({k}, {i})")
