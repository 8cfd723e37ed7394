"""torch.unique and torch.unique_consecutive (dim=None) on the daemon (``_unique2``, ``_unique``,
``unique_consecutive``: the count read once, the rest daemon rows; no CPU fallback) with
PyTorch's values, inverse indices and counts: every dtype the device holds, repeats, NaN (each
NaN its own value), 0-d, empty and non-contiguous inputs."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

D = "tensord"
DTYPES = (torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16)


def _inputs(dtype: "torch.dtype") -> list:
    g = torch.Generator().manual_seed(4)
    xs = [torch.randint(-3, 4, (5, 6), generator=g).to(dtype),  # many repeats
          torch.randint(-3, 4, (17,), generator=g).to(dtype),
          torch.tensor(2).to(dtype), torch.zeros(0, 3, dtype=dtype),
          torch.ones(4, dtype=dtype)]
    if dtype.is_floating_point:
        xs.append(torch.randn(4, 5, generator=g, dtype=torch.float64).to(dtype))
        xs.append(torch.tensor([1.0, float("nan"), 1.0, float("nan"), -0.5, float("inf")],
                               dtype=dtype))
    return xs


def _same(got: object, want: object) -> None:
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.device.type == D and g.dtype == w.dtype and g.shape == w.shape, (g, w)
        torch.testing.assert_close(g.cpu(), w, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unique_matches_pytorch(td: object, dtype: "torch.dtype") -> None:
    for x, sorted_, inverse, counts in itertools.product(
            _inputs(dtype), (True, False), (False, True), (False, True)):
        want = torch.unique(x, sorted=sorted_, return_inverse=inverse, return_counts=counts)
        got = torch.unique(x.to(D), sorted=sorted_, return_inverse=inverse,
                           return_counts=counts)
        _same(got, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unique_consecutive_matches_pytorch(td: object, dtype: "torch.dtype") -> None:
    for x, inverse, counts in itertools.product(_inputs(dtype), (False, True), (False, True)):
        want = torch.unique_consecutive(x, return_inverse=inverse, return_counts=counts)
        got = torch.unique_consecutive(x.to(D), return_inverse=inverse, return_counts=counts)
        _same(got, want)


def test_unique_of_views_and_the_aten_ops(td: object) -> None:
    x = torch.randint(0, 5, (6, 4), generator=torch.Generator().manual_seed(1)).double()
    view = x.t().contiguous().to(D).t()  # the daemon holds x through a transposed view
    _same(torch.unique(view, return_inverse=True, return_counts=True),
          torch.unique(x, return_inverse=True, return_counts=True))
    _same(torch.unique_consecutive(view, return_counts=True),
          torch.unique_consecutive(x, return_counts=True))
    # the older overload, and _unique2's empty outputs for what was not asked
    _same(torch.ops.aten._unique(x.to(D), True, True), torch.ops.aten._unique(x, True, True))
    _same(torch.ops.aten._unique2(x.to(D), True, False, False),
          torch.ops.aten._unique2(x, True, False, False))
