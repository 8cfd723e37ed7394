"""ATen ops that pick or place elements by rank or by mask, written as a few of the daemon's
rows (the rest of ``_aten_map``'s table; same conventions). Each queues its commands and
returns: no value is read back, so none costs a round trip.

- ``kthvalue``, ``median``, ``nanmedian``: a stable ``sort`` along the dim and the element at
  the rank. NaN sorts last, so ``median`` (which returns NaN, with the index of the first NaN,
  when the slice holds one) takes rank ``n - count(NaN)`` there, and ``nanmedian`` the lower
  median of the ``n - count(NaN)`` numbers before them.
- ``masked_scatter`` and its backward: the k-th True of the mask reads (writes) element k of
  the source, k found by a ``cumsum`` of the mask.
- ``addbmm``: ``beta * self + alpha * bmm(b1, b2).sum(0)``.

Outputs are made contiguous: PyTorch sees them as fresh tensors (Note [Strides mirror the
daemon]).
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import torch

from ._aten_map import c, rule, torch_args
from ._transfer import native_dtype

aten = torch.ops.aten
_INT64 = native_dtype(torch.int64)


def _at_rank(v: Any, i: Any, rank: Any, dim: int, keepdim: bool) -> Tuple[Any, Any]:
    """(values, indices) of sorted ``v``/``i`` at ``rank`` (int64, size 1 along ``dim``)."""
    vals = c("gather", [v, rank], dim=dim)
    idx = c("gather", [i, rank], dim=dim)
    if not keepdim:
        vals, idx = c("squeeze", [vals], dim=dim), c("squeeze", [idx], dim=dim)
    return c("contiguous", [vals]), c("contiguous", [idx])


def _rank_of_median(x: Any, dim: int, n: int, ignore_nan: bool) -> Any:
    """The sorted position of the median of each slice along ``dim`` (keepdim, int64)."""
    nans = c("sum", [c("ne", [x, x])], dim=[dim], keepdim=True, dtype=_INT64)
    if ignore_nan:  # the lower median of the numbers; rank 0 when all are NaN
        valid = c("sub", [n, nans])
        return c("clamp", [c("floor_divide", [c("sub", [valid, 1]), 2])], min=0)
    return c("where", [c("gt", [nans, 0]), c("sub", [n, nans]), (n - 1) // 2])


def _by_rank(targs: tuple, self: Any, dim: Optional[int], keepdim: bool,
             rank_fn: Any) -> Optional[Tuple[Any, Any]]:
    """(values, indices) of the element at ``rank_fn(sorted, dim, n)`` along ``dim`` (None:
    all elements, values only)."""
    x = targs[0]
    if dim is None:
        if x.numel() == 0:
            return None
        flat = c("reshape", [self], shape=[-1])
        v, i = c("sort", [flat], dim=0, stable=True)
        vals, _ = _at_rank(v, i, rank_fn(flat, 0, x.numel()), 0, True)
        return c("reshape", [vals], shape=[]), None
    if x.dim() == 0:
        self = c("reshape", [self], shape=[1])
        dim = 0
    d = dim % max(x.dim(), 1)
    n = x.shape[d] if x.dim() > 0 else 1
    if n == 0:
        return None
    v, i = c("sort", [self], dim=d, stable=True)
    vals, idx = _at_rank(v, i, rank_fn(self, d, n), d, keepdim or x.dim() == 0)
    if x.dim() == 0:
        vals, idx = c("reshape", [vals], shape=[]), c("reshape", [idx], shape=[])
    return vals, idx


def _constant_rank(targs: tuple, k: int, d: int) -> Any:
    shape = list(targs[0].shape) or [1]
    shape[d] = 1
    return c("full", [], shape=shape, fill_value=float(k), dtype=_INT64)


@rule(aten.kthvalue.default)
@torch_args
def _kthvalue(targs: tuple, self: Any, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    out = _by_rank(targs, self, dim, keepdim,
                   lambda x, d, n: _constant_rank(targs, k - 1, d))
    return NotImplemented if out is None else out


def _median_rule(ignore_nan: bool, with_dim: bool) -> Any:
    @torch_args
    def fn(targs: tuple, self: Any, dim: Optional[int] = None, keepdim: bool = False) -> Any:
        out = _by_rank(targs, self, dim if with_dim else None, keepdim,
                       lambda x, d, n: _rank_of_median(x, d, n, ignore_nan))
        if out is None:
            return NotImplemented
        return out if with_dim else out[0]
    return fn


rule(aten.median.default)(_median_rule(False, False))
rule(aten.median.dim)(_median_rule(False, True))
rule(aten.nanmedian.default)(_median_rule(True, False))
rule(aten.nanmedian.dim)(_median_rule(True, True))


@rule(aten.addbmm.default)
def _addbmm(self: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    prod = c("sum", [c("bmm", [batch1, batch2])], dim=[0])
    if alpha != 1:
        prod = c("mul", [prod, alpha])
    if beta == 0:  # PyTorch ignores self then (its NaN too)
        return prod
    return c("add", [prod, self if beta == 1 else c("mul", [self, beta])])


def _true_ranks(mask: Any, shape: List[int]) -> Tuple[Any, Any]:
    """The flat mask broadcast to ``shape``, and for each element the number of Trues before
    it (int64): the source element a True position takes."""
    m = c("reshape", [c("contiguous", [c("expand", [mask], size=shape)])], shape=[-1])
    ranks = c("sub", [c("cumsum", [m], dim=0, dtype=_INT64), 1])
    return m, c("clamp", [ranks], min=0)


@rule(aten.masked_scatter.default)
@torch_args
def _masked_scatter(targs: tuple, self: Any, mask: Any, source: Any) -> Any:
    x, src = targs[0], targs[2]
    if x.dtype != src.dtype:
        return NotImplemented
    shape = list(torch.broadcast_shapes(x.shape, targs[1].shape))
    if src.numel() == 0:  # PyTorch then requires a mask without a True
        return c("clone", [c("expand", [self], size=shape)])
    m, ranks = _true_ranks(mask, shape)
    taken = c("index_select", [c("reshape", [source], shape=[-1]), ranks], dim=0)
    base = c("reshape", [c("contiguous", [c("expand", [self], size=shape)])], shape=[-1])
    return c("reshape", [c("where", [m, taken, base])], shape=shape)


@rule(aten.masked_scatter_backward.default)
@torch_args
def _masked_scatter_backward(targs: tuple, grad_output: Any, mask: Any, sizes: Any) -> Any:
    """The source's gradient: element k is the gradient at the k-th True (zeros past the last
    True); the False positions all land in one extra slot that is dropped."""
    g = targs[0]
    n = 1
    for s in sizes:
        n *= int(s)
    m, ranks = _true_ranks(mask, list(g.shape))
    slot = c("clamp", [c("where", [m, ranks, n])], max=n)
    flat = c("reshape", [c("contiguous", [grad_output])], shape=[-1])
    buf = c("zeros", [], shape=[n + 1], dtype=native_dtype(g.dtype))
    buf = c("scatter_add", [buf, slot, flat], dim=0)
    return c("reshape", [c("contiguous", [c("narrow", [buf], dim=0, start=0, length=n)])],
             shape=[int(s) for s in sizes])
