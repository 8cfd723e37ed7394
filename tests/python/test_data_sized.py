"""nonzero, argwhere, masked_select (outputs sized by data: the count is read, then
nonzero_static asks for that many coordinates) and nonzero_static itself, against PyTorch; and
cumprod's gradient where the input holds zeros (exact, as PyTorch's cumprod_backward)."""

from __future__ import annotations

import pytest
import torch

import tensord as td
from helpers import assert_same, from_torch, to_torch

pytestmark = pytest.mark.usefixtures("session")


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool,
                                   torch.float16])
def test_nonzero_matches_pytorch(dtype):
    x = torch.randint(-1, 2, (3, 4, 5), generator=_gen(1)).to(dtype)
    assert_same(td.nonzero(from_torch(x)), torch.nonzero(x))
    assert_same(from_torch(x).argwhere(), torch.argwhere(x))
    for got, want in zip(from_torch(x).nonzero(as_tuple=True), x.nonzero(as_tuple=True)):
        assert_same(got, want)


def test_nonzero_edge_cases():
    nan = torch.tensor([0.0, float("nan"), -0.0, 2.0])  # NaN is nonzero, -0.0 is zero
    assert_same(td.nonzero(from_torch(nan)), torch.nonzero(nan))
    for x in (torch.tensor(3.0), torch.tensor(0.0), torch.zeros(0, 3), torch.zeros(2, 3)):
        assert_same(td.nonzero(from_torch(x)), torch.nonzero(x))
    strided = torch.randint(0, 2, (4, 6), generator=_gen(2)).float()
    assert_same(td.nonzero(from_torch(strided).t()), torch.nonzero(strided.t()))


def test_nonzero_static_pads_and_truncates_like_pytorch():
    x = torch.tensor([[0, 1, 0], [2, 0, 3]])
    t = from_torch(x)
    for size, fill in ((5, -1), (2, -1), (0, -1), (4, 9)):
        want = torch.nonzero_static(x, size=size, fill_value=fill) \
            if hasattr(torch, "nonzero_static") else _nonzero_static(x, size, fill)
        assert_same(td.nonzero_static(t, size=size, fill_value=fill), want)
    with pytest.raises(td.InvalidArgumentError, match="size must be non-negative"):
        td.nonzero_static(t, size=-1).numpy()


def _nonzero_static(x: torch.Tensor, size: int, fill: int) -> torch.Tensor:
    """PyTorch 1.13 lacks torch.nonzero_static: its documented result from torch.nonzero."""
    nz = torch.nonzero(x)[:size]
    pad = torch.full((size - nz.shape[0], x.dim()), fill, dtype=torch.int64)
    return torch.cat([nz, pad])


def test_masked_select_values_and_gradient():
    x = torch.randn(3, 4, generator=_gen(3), requires_grad=True)
    for mask in (torch.rand(3, 4, generator=_gen(4)) > 0.5,   # same shape
                 torch.tensor([True, False, True, True]),      # broadcast over rows
                 torch.zeros(3, 4, dtype=torch.bool)):         # nothing selected
        t = from_torch(x.detach()).requires_grad_()
        got = td.masked_select(t, from_torch(mask))
        want = torch.masked_select(x, mask)
        assert_same(got, want.detach())
        w = torch.randn(want.shape, generator=_gen(5))
        (want * w).sum().backward()
        (got * from_torch(w)).sum().backward()
        assert_same(t.grad, x.grad)
        x.grad = None
    # the mask's shape may be the larger one
    row = torch.randn(4, generator=_gen(6))
    mask = torch.rand(2, 4, generator=_gen(7)) > 0.3
    assert_same(from_torch(row).masked_select(from_torch(mask)), row.masked_select(mask))


def test_masked_select_bad_input_names_the_problem():
    t = from_torch(torch.randn(3, 4))
    with pytest.raises(TypeError, match="bool mask"):
        td.masked_select(t, from_torch(torch.ones(3, 4)))
    with pytest.raises(ValueError, match=r"mask \[5\] does not broadcast"):
        td.masked_select(t, from_torch(torch.ones(5, dtype=torch.bool)))


@pytest.mark.parametrize("values", [[2.0, 0.0, 3.0], [0.0, 2.0, 3.0], [2.0, 3.0, 0.0],
                                    [0.0, 0.0, 4.0], [1.5, 0.0, 2.0, 0.0, 5.0], [2.0, 3.0, 4.0]])
def test_cumprod_gradient_is_exact_at_zeros(values):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    g = torch.arange(1.0, len(values) + 1, dtype=torch.float64)
    torch.cumprod(x, 0).backward(g)
    t = from_torch(x.detach()).requires_grad_()
    td.cumprod(t, 0).backward(from_torch(g))
    assert_same(t.grad, x.grad)
    assert not torch.isnan(to_torch(t.grad)).any()


def test_cumprod_gradient_along_a_dim_with_a_dtype():
    x = torch.randn(3, 5, generator=_gen(8))
    x[1, 2] = 0.0
    x[2, 0] = 0.0
    x[2, 3] = 0.0
    xr = x.clone().requires_grad_()
    w = torch.randn(3, 5, dtype=torch.float64, generator=_gen(9))
    # PyTorch 1.13's backward of cumprod(dtype=) fails itself (masked_scatter's dtypes): the
    # same product through an explicit cast
    (torch.cumprod(xr.double(), 1) * w).sum().backward()
    t = from_torch(x).requires_grad_()
    (td.cumprod(t, 1, dtype=td.float64) * from_torch(w)).sum().backward()
    assert_same(t.grad, xr.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_unique_and_unique_consecutive_match_pytorch(dtype):
    """dim=None; no NaN here (PyTorch 1.13's CPU unique orders NaN by a hash table)."""
    xs = [torch.randint(-3, 4, (5, 6), generator=_gen(3)).to(dtype),
          torch.tensor(2).to(dtype), torch.zeros(0, 3, dtype=dtype), torch.ones(4, dtype=dtype)]
    for x in xs:
        for inverse in (False, True):
            for counts in (False, True):
                got = td.unique(from_torch(x), return_inverse=inverse, return_counts=counts)
                want = torch.unique(x, sorted=True, return_inverse=inverse,
                                    return_counts=counts)
                for g, w in zip(got if isinstance(got, tuple) else (got,),
                                want if isinstance(want, tuple) else (want,)):
                    assert_same(g, w)
                got = from_torch(x).unique_consecutive(return_inverse=inverse,
                                                       return_counts=counts)
                want = torch.unique_consecutive(x, return_inverse=inverse,
                                                return_counts=counts)
                for g, w in zip(got if isinstance(got, tuple) else (got,),
                                want if isinstance(want, tuple) else (want,)):
                    assert_same(g, w)
    strided = torch.randint(0, 3, (4, 6), generator=_gen(5)).float()
    assert_same(from_torch(strided).t().unique(), torch.unique(strided.t()))
    with pytest.raises(NotImplementedError):
        td.unique(from_torch(strided), dim=0)
