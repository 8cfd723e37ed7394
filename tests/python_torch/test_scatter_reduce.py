"""scatter_reduce, index_reduce and scatter(..., reduce=) run on the daemon (its ``scatter_reduce``
and ``index_reduce`` rows; no CPU fallback: conftest's ``no_fallback``) with PyTorch's values:
every reduce with and without self, float32/float64/int64/bfloat16, 1- to 3-d along each dim,
indices repeated, non-contiguous inputs, NaN in amax/amin; bad indices are errors naming them.
Forward only: PyTorch's autograd differentiates these ops on the client."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

D = "tensord"
REDUCES = ("sum", "prod", "mean", "amax", "amin")
DTYPES = (torch.float32, torch.float64, torch.int64, torch.bfloat16)
SHAPES = ((5,), (4, 3), (3, 4, 2))


def _values(shape: tuple, dtype: "torch.dtype", g: "torch.Generator") -> "torch.Tensor":
    if dtype == torch.int64:
        return torch.randint(-6, 7, shape, generator=g)
    # within [0.5, 2) in magnitude so products of a few stay well scaled
    mag = torch.rand(shape, generator=g, dtype=torch.float64) * 1.5 + 0.5
    sign = torch.where(torch.rand(shape, generator=g) < 0.3, -1.0, 1.0).double()
    return (mag * sign).to(dtype)


def _close(got: "torch.Tensor", want: "torch.Tensor") -> None:
    assert got.device.type == D and got.dtype == want.dtype and got.shape == want.shape
    if want.dtype == torch.bfloat16:
        # the daemon reduces in float32 and rounds once; PyTorch rounds at every step
        torch.testing.assert_close(got.cpu().float(), want.float(), rtol=3e-2, atol=6e-2)
    else:
        torch.testing.assert_close(got.cpu(), want, equal_nan=True)


def _case(shape: tuple, dim: int, dtype: "torch.dtype", seed: int) -> tuple:
    """self, an index with repeats (more entries along dim than self has), src."""
    g = torch.Generator().manual_seed(seed)
    ishape = list(shape)
    ishape[dim] = shape[dim] + 2
    if len(shape) > 1:  # index smaller than self outside dim too
        k = (dim + 1) % len(shape)
        ishape[k] = max(1, shape[k] - 1)
    index = torch.randint(0, shape[dim], ishape, generator=g)
    src_shape = [s + 1 for s in ishape]  # src larger than index: only index's part is read
    return _values(shape, dtype, g), index, _values(tuple(src_shape), dtype, g)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_matches_pytorch(td: object, reduce: str, dtype: "torch.dtype") -> None:
    for shape, include_self in itertools.product(SHAPES, (True, False)):
        for dim in range(-1, len(shape)):
            x, index, src = _case(shape, dim % len(shape), dtype, seed=len(shape) * 10 + dim)
            want = x.scatter_reduce(dim, index, src, reduce, include_self=include_self)
            got = x.to(D).scatter_reduce(dim, index.to(D), src.to(D), reduce,
                                         include_self=include_self)
            _close(got, want)


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_non_contiguous_and_in_place(td: object, reduce: str) -> None:
    x, index, src = _case((4, 3), 0, torch.float64, seed=7)
    xt, srct = x.t().contiguous(), src.t().contiguous()  # stored transposed: x, src as views
    for include_self in (True, False):
        want = x.scatter_reduce(0, index, src, reduce, include_self=include_self)
        got = xt.to(D).t().scatter_reduce(0, index.to(D), srct.to(D).t(), reduce,
                                          include_self=include_self)
        _close(got, want)
        inplace = x.to(D)
        inplace.scatter_reduce_(0, index.to(D), src.to(D), reduce, include_self=include_self)
        _close(inplace, want)


@pytest.mark.parametrize("reduce", ("amax", "amin"))
def test_nan_propagates_as_in_pytorch(td: object, reduce: str) -> None:
    nan = float("nan")
    x = torch.tensor([nan, 1.0, 2.0, 3.0])
    index = torch.tensor([0, 1, 1, 2, 2])
    src = torch.tensor([5.0, nan, 3.0, -1.0, 4.0])
    for include_self in (True, False):
        want = x.scatter_reduce(0, index, src, reduce, include_self=include_self)
        got = x.to(D).scatter_reduce(0, index.to(D), src.to(D), reduce, include_self=include_self)
        _close(got, want)


def test_empty_index_leaves_self(td: object) -> None:
    x = torch.randn(3, 2)
    index = torch.zeros(0, 2, dtype=torch.int64)
    src = torch.randn(0, 2)
    got = x.to(D).scatter_reduce(0, index.to(D), src.to(D), "prod", include_self=False)
    _close(got, x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduce", ("prod", "mean", "amax", "amin"))
def test_index_reduce_matches_pytorch(td: object, reduce: str, dtype: "torch.dtype") -> None:
    for shape, include_self in itertools.product(SHAPES, (True, False)):
        for dim in range(len(shape)):
            g = torch.Generator().manual_seed(dim * 7 + len(shape))
            x = _values(shape, dtype, g)
            n = shape[dim] + 3  # repeats
            index = torch.randint(0, shape[dim], (n,), generator=g)
            sshape = list(shape)
            sshape[dim] = n
            source = _values(tuple(sshape), dtype, g)
            want = x.index_reduce(dim, index, source, reduce, include_self=include_self)
            got = x.to(D).index_reduce(dim, index.to(D), source.to(D), reduce,
                                       include_self=include_self)
            _close(got, want)
            # an int32 index and a non-contiguous source
            src_t = source.transpose(0, -1).contiguous().to(D).transpose(0, -1)
            got = x.to(D).index_reduce(dim, index.int().to(D), src_t, reduce,
                                       include_self=include_self)
            _close(got, want)


@pytest.mark.parametrize("reduce", ("add", "multiply"))
def test_scatter_with_reduce_argument(td: object, reduce: str) -> None:
    x, index, src = _case((4, 3), 1, torch.float32, seed=3)
    _close(x.to(D).scatter(1, index.to(D), src.to(D), reduce=reduce),
           x.scatter(1, index, src, reduce=reduce))
    _close(x.to(D).scatter(1, index.to(D), 1.5, reduce=reduce),
           x.scatter(1, index, 1.5, reduce=reduce))


def test_bad_indices_are_errors_naming_them(td: object) -> None:
    x, src = torch.zeros(3, device=D), torch.ones(2, device=D)
    for bad in (-1, 3):
        index = torch.tensor([0, bad], device=D)
        with pytest.raises(Exception, match=f"index {bad} is out of bounds for dimension 0"):
            x.scatter_reduce(0, index, src, "sum").cpu()
        with pytest.raises(Exception, match=f"index_reduce.*index {bad} is out of bounds"):
            x.index_reduce(0, index, src, "amax").cpu()
