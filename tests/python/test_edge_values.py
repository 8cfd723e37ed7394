"""Values PyTorch computes at the edges of an op's domain, which tensord once got wrong (issue 25):
prod's gradient at zeros, the 0-norm's gradient, integer hardtanh, bool add with alpha, integer
arange and linspace. Small hand-computed cases, each also checked against local PyTorch."""

from __future__ import annotations

import pytest
import torch

import tensord as td
import tensord.nn.functional as F
from helpers import assert_same, from_torch, to_torch

pytestmark = pytest.mark.usefixtures("session")


def _weights(out_shape, dtype) -> torch.Tensor:
    """Distinct output weights, so that every element's gradient shows."""
    n = 1
    for d in out_shape:
        n *= d
    return torch.arange(1, n + 1, dtype=dtype).reshape(tuple(out_shape))


def _grad(fn, x: torch.Tensor) -> torch.Tensor:
    """The daemon's gradient of (fn(x) * weights).sum()."""
    leaf = from_torch(x).requires_grad_()
    out = fn(leaf)
    (out * from_torch(_weights(out.shape, x.dtype))).sum().backward()
    return to_torch(leaf.grad)


def _torch_grad(fn, x: torch.Tensor) -> torch.Tensor:
    leaf = x.clone().requires_grad_()
    out = fn(leaf)
    (out * _weights(out.shape, x.dtype)).sum().backward()
    return torch.zeros_like(x) if leaf.grad is None else leaf.grad  # 1.13's norm(p=0): None


def test_prod_gradient_at_one_zero_is_the_product_of_the_others():
    x = td.tensor([2.0, 0.0, 3.0], requires_grad=True)
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 6.0, 0.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("zeros", [[], [(0, 1, 2)], [(0, 1, 2), (1, 0, 0)], [(1, 2, 0), (1, 2, 3)],
                                   [(0, 0, 0), (0, 0, 1), (0, 1, 1)]])
@pytest.mark.parametrize("dim", [None, 0, 1, 2, -1])
def test_prod_gradient_with_zeros_matches_torch(dtype, zeros, dim):
    x = torch.linspace(0.5, 2.0, 24, dtype=dtype).reshape(2, 3, 4)
    for z in zeros:
        x[z] = 0
    if dim is None:
        fn_td, fn_t = (lambda t: t.prod()), (lambda t: t.prod())
    else:
        fn_td, fn_t = (lambda t: t.prod(dim)), (lambda t: t.prod(dim))
    got, want = _grad(fn_td, x), _torch_grad(fn_t, x)
    assert not torch.isnan(got).any()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_zero_norm_has_zero_gradient():
    x = torch.tensor([[1.5, 0.0, -2.0], [0.0, 0.0, 3.0]], dtype=torch.float64)
    for dim in (None, 1):
        norm = (lambda t: t.norm(0)) if dim is None else (lambda t: t.norm(0, dim=dim))
        got = _grad(norm, x)
        assert got.tolist() == [[0.0] * 3] * 2
        torch.testing.assert_close(got, _torch_grad(norm, x))
    # normalize(p=0) divides by the count of nonzeros: only the division has a gradient.
    got = _grad(lambda t: F.normalize(t, p=0.0, dim=1), x)
    torch.testing.assert_close(got, _torch_grad(lambda t: torch.nn.functional.normalize(t, p=0.0, dim=1), x))


_BOUNDS = [(-1.5, 2.5), (-1.7, 2.7), (-2.5, -1.5), (0.5, 2.5)]


# uint8 only with bounds it can hold: negative bounds on uint8 are no case at all.
@pytest.mark.parametrize("lo,hi,dtype", [(lo, hi, d) for lo, hi in _BOUNDS
                                         for d in (torch.int64, torch.int32, torch.uint8)
                                         if d != torch.uint8 or lo >= 0])
def test_hardtanh_on_integers_keeps_the_dtype(lo, hi, dtype):
    x = torch.tensor([-3, -2, 0, 1, 2, 3]).clamp(min=0 if dtype == torch.uint8 else -9).to(dtype)
    assert_same(F.hardtanh(from_torch(x), lo, hi), torch.nn.functional.hardtanh(x, lo, hi))
    assert F.hardtanh(td.tensor([-3, 0, 3]), -1.5, 2.5).tolist() == [-1, 0, 2]


def test_bool_add_honours_alpha():
    a, b = torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False])
    for alpha in (False, True):
        got = td.add(from_torch(a), from_torch(b), alpha=alpha)
        assert_same(got, torch.add(a, b, alpha=alpha))
        assert_same(from_torch(a).add(from_torch(b), alpha=alpha), a.add(b, alpha=alpha))
    assert td.add(from_torch(a), from_torch(b), alpha=False).tolist() == [True, False, True, False]


# arange with an integer dtype: PyTorch >= 2 takes the length from the bounds as given
# (ceil((end - start) / step)) and the values from the truncated start and step; PyTorch 1.13
# truncated every bound first. tensord follows current PyTorch (the one its PyTorch device runs
# under, whose meta functions size the result): these are the values it computes.
ARANGE_INT = [((3.1,), [0, 1, 2, 3]), ((0.5, 3.1), [0, 1, 2]), ((0.5, 3.1, 1.5), [0, 1]),
              ((-2.5, 2.5), [-2, -1, 0, 1, 2]), ((0.5, 3.1, 0.7), [0, 0, 0, 0]),
              ((-0.5, 3.0), [0, 1, 2, 3]), ((2.9,), [0, 1, 2]), ((-2.7, 3.2, 2.9), [-2, 0, 2]),
              ((5.5, -1.2, -1.7), [5, 4, 3, 2]), ((1, 7, 2), [1, 3, 5])]


@pytest.mark.parametrize("args,want", ARANGE_INT)
def test_integer_arange_with_fractional_bounds(args, want):
    assert td.arange(*args, dtype=td.int64).tolist() == want
    if torch.__version__ >= "2":
        assert torch.arange(*args, dtype=torch.int64).tolist() == want
    elif all(float(a).is_integer() for a in args):
        assert torch.arange(*args, dtype=torch.int64).tolist() == want


# PyTorch's CPU kernel truncates the bounds, then computes start + i * step for the first half
# and end - (n - 1 - i) * step for the rest, as tensord does. Its AVX2 loop computes 4 int64
# lanes from one truncated base, which moves some values by one (linspace(-3, 7, 7) has 1 where
# the formula gives 2; linspace(-7, -6, 8) ends at -5): cases where that happens are left out.
@pytest.mark.parametrize("args", [(0, 10, 4), (0.5, 9.7, 6), (10, -3, 6), (0, 10, 7),
                                  (-2.5, 2.5, 5), (0, -10, 7), (1, 2, 3), (3.7, 3.2, 1)])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_integer_linspace_rounds_as_torch(args, dtype):
    assert_same(td.linspace(*args, dtype=TD_DTYPES[dtype]), torch.linspace(*args, dtype=dtype))
    assert td.linspace(0.5, 9.7, 6, dtype=td.int64).tolist() == [0, 1, 3, 5, 7, 9]


TD_DTYPES = {torch.int64: td.int64, torch.int32: td.int32}
