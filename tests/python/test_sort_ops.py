"""sort, topk, argsort, cumsum, cumprod, flip, atan2 and multinomial beyond the table-driven
cases (op_cases.py): ties and NaN, the PyTorch-style calls of the native client, gradients, the
session generator, and clear errors."""

from __future__ import annotations

import pytest
import torch

import tensord as td
from helpers import assert_same, from_torch, to_torch

pytestmark = pytest.mark.usefixtures("session")


def test_sort_is_stable_and_puts_nan_last():
    ties = torch.tensor([[3.0, 1.0, 2.0, 1.0, 3.0], [0.0, 0.0, 1.0, 0.0, 2.0]])
    for descending in (False, True):
        v, i = td.sort(from_torch(ties), dim=1, descending=descending, stable=True)
        want = torch.sort(ties, dim=1, descending=descending, stable=True)
        assert_same(v, want.values)
        assert_same(i, want.indices)
    nan = torch.tensor([1.0, float("nan"), 0.0, -1.0, float("nan"), 2.0])
    for descending in (False, True):
        v, i = td.sort(from_torch(nan), descending=descending)
        want = torch.sort(nan, descending=descending, stable=True)
        assert to_torch(i).tolist() == want.indices.tolist()
        assert torch.equal(to_torch(v).isnan(), want.values.isnan())


def test_methods_read_like_pytorch():
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(3))
    t = from_torch(x)
    v, i = t.topk(3)
    assert_same(v, x.topk(3).values)
    assert_same(i, x.topk(3).indices)
    assert_same(t.argsort(dim=0, descending=True), x.argsort(dim=0, descending=True))
    assert_same(t.cumsum(1), x.cumsum(1))
    assert_same(t.cumprod(0), x.cumprod(0))
    assert_same(t.flip([0, 1]), x.flip([0, 1]))
    assert_same(td.atan2(t, t.flip([1])), torch.atan2(x, x.flip([1])))


def _fd_check(fn, x: torch.Tensor, eps: float = 1e-6) -> None:
    """The daemon's float64 gradient of fn(x) * w against central differences of its forward."""
    shape = tuple(fn(from_torch(x)).shape)
    w = torch.linspace(-1, 2, int(torch.Size(shape).numel()), dtype=torch.float64).reshape(shape)
    leaf = from_torch(x).requires_grad_()
    (fn(leaf) * from_torch(w)).sum().backward()
    got = to_torch(leaf.grad)
    want = torch.zeros_like(x)
    for k in range(x.numel()):
        d = torch.zeros(x.numel(), dtype=torch.float64)
        d[k] = eps
        d = d.reshape(x.shape)
        hi = (to_torch(fn(from_torch(x + d))) * w).sum()
        lo = (to_torch(fn(from_torch(x - d))) * w).sum()
        want.view(-1)[k] = (hi - lo) / (2 * eps)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,fn", [
    ("sort", lambda t: t.sort(dim=0, descending=True)[0]),
    ("topk", lambda t: t.topk(2, dim=1)[0]),
    ("cumsum", lambda t: t.cumsum(1)),
    ("flip", lambda t: t.flip([0])),
    ("atan2", lambda t: td.atan2(t, t * t + 0.5)),
])
def test_gradients_match_finite_differences(name, fn):
    x = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    _fd_check(fn, x)


def test_multinomial_follows_the_session_generator():
    p = from_torch(torch.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]]))
    td.manual_seed(11)
    a = td.multinomial(p, 200, replacement=True).numpy()
    td.manual_seed(11)
    b = td.multinomial(p, 200, replacement=True).numpy()
    assert (a == b).all()
    assert a.shape == (2, 200) and not (a[0] == 1).any()  # a zero weight is never drawn
    freq = (a[0] == 2).mean()
    assert 0.45 < freq < 0.75
    drawn = td.multinomial(from_torch(torch.ones(2, 4)), 4).numpy()  # without replacement
    assert [sorted(r) for r in drawn.tolist()] == [[0, 1, 2, 3]] * 2


def test_bad_calls_are_clear_errors():
    x = from_torch(torch.ones(2, 3))
    for fn, match in [
        (lambda: td.topk(x, 4)[0], r"topk\(\): k \(4\) is out of range for dimension 1 of size 3"),
        (lambda: td.sort(x, dim=2)[1], "out of range"),
        (lambda: td.flip(x, [1, -1]), "multiple times"),
        (lambda: td.multinomial(x, 4), "without replacement"),
        (lambda: td.multinomial(from_torch(torch.tensor([0.5, -1.0])), 1), "element < 0"),
        (lambda: td.multinomial(from_torch(torch.zeros(3)), 1), "sum of probabilities"),
        (lambda: td.cumsum(x, dim=3), "out of range"),
    ]:
        with pytest.raises(td.Error, match=match):
            fn().numpy()
    assert x.sum().item() == 6.0  # the session goes on


@pytest.mark.parametrize("k", [1, 5, 32, 33, 70])  # both CPU paths: buffer (k <= 32), selection
@pytest.mark.parametrize("largest", [True, False])
def test_topk_is_the_stable_sorts_first_k(k, largest):
    g = torch.Generator().manual_seed(k)
    x = torch.randint(-4, 5, (3, 70, 5), generator=g).double()  # many ties
    x[0, 7, 1] = x[2, 3, 4] = x[1, 50, 0] = float("nan")
    for dim, t in ((1, x), (-1, x.transpose(1, 2)), (0, x.transpose(0, 1)[:3])):
        if k > t.shape[dim]:
            continue
        v, i = td.topk(from_torch(t), k, dim=dim, largest=largest)
        want = torch.sort(t, dim=dim, descending=largest, stable=True)
        assert to_torch(i).tolist() == want.indices.narrow(dim, 0, k).tolist()
        torch.testing.assert_close(to_torch(v), want.values.narrow(dim, 0, k), equal_nan=True)
    ints = torch.randint(-100, 100, (4, 41), generator=g)
    assert_same(td.topk(from_torch(ints), k % 41 or 1)[1],
                torch.sort(ints, descending=True, stable=True).indices[:, :k % 41 or 1])
    empty = torch.zeros(0, 40)
    v, i = td.topk(from_torch(empty), min(k, 40))
    assert tuple(v.shape) == tuple(i.shape) == (0, min(k, 40))


def test_cumsum_along_a_leading_dim_matches_pytorch():
    g = torch.Generator().manual_seed(5)
    for shape, dim in (((7, 1100), 0), ((3, 9, 513), 1), ((2, 5, 1), 1), ((0, 600), 0)):
        x = torch.randn(*shape, generator=g)
        assert_same(td.cumsum(from_torch(x), dim=dim), torch.cumsum(x, dim))
        assert_same(td.cumprod(from_torch(x), dim=dim), torch.cumprod(x, dim))
    wrap = torch.full((5, 600), 2**62, dtype=torch.int64)  # integers wrap as PyTorch's
    assert_same(td.cumsum(from_torch(wrap), dim=0), torch.cumsum(wrap, 0))
    b = torch.rand(6, 530, generator=g) > 0.7
    assert_same(td.cumsum(from_torch(b), dim=0), torch.cumsum(b, 0))
    assert_same(td.cumsum(from_torch(x.t()), dim=1), torch.cumsum(x.t(), 1))  # non-contiguous
