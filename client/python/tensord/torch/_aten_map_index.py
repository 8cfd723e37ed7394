"""ATen's index_select, scatter (plain, add, reduce forms), index_reduce, gather and put
overloads mapped onto the daemon's index rows (``_aten_map``'s conventions)."""

from __future__ import annotations

from typing import Any

import torch

from ._aten_map import c, rule, torch_args
from ._aten_map_nn import _int64_index
from ._transfer import native_dtype

aten = torch.ops.aten


@rule(aten.index_select.default)
def _index_select(self: Any, dim: int, index: Any) -> Any:
    return c("index_select", [self, index], dim=dim)


@rule(aten.scatter.src)
@torch_args
def _scatter(targs: tuple, self: Any, dim: int, index: Any, src: Any) -> Any:
    return c("scatter", [self, _int64_index(targs, 2, index), src], dim=dim)


@rule(aten.scatter_add.default)
@torch_args
def _scatter_add(targs: tuple, self: Any, dim: int, index: Any, src: Any) -> Any:
    return c("scatter_add", [self, _int64_index(targs, 2, index), src], dim=dim)


@rule(aten.scatter_reduce.two)
@torch_args
def _scatter_reduce(targs: tuple, self: Any, dim: int, index: Any, src: Any, reduce: str, *,
                    include_self: bool = True) -> Any:
    """``reduce`` sum, prod, mean, amax or amin; without ``include_self`` self's value is left
    out of the positions the index names (the daemon's ``scatter_reduce`` row)."""
    return c("scatter_reduce", [self, _int64_index(targs, 2, index), src], dim=dim,
             reduce=reduce, include_self=include_self)


@rule(aten.index_reduce.default)
@torch_args
def _index_reduce(targs: tuple, self: Any, dim: int, index: Any, source: Any, reduce: str, *,
                  include_self: bool = True) -> Any:
    return c("index_reduce", [self, _int64_index(targs, 2, index), source], dim=dim,
             reduce=reduce, include_self=include_self)


_SCATTER_REDUCE = {"add": "sum", "multiply": "prod"}  # scatter(..., reduce=) names


@rule(aten.scatter.reduce)
@torch_args
def _scatter_src_reduce(targs: tuple, self: Any, dim: int, index: Any, src: Any, *,
                        reduce: str) -> Any:
    if reduce not in _SCATTER_REDUCE:
        return NotImplemented
    return c("scatter_reduce", [self, _int64_index(targs, 2, index), src], dim=dim,
             reduce=_SCATTER_REDUCE[reduce])


@rule(aten.scatter.value_reduce)
@torch_args
def _scatter_value_reduce(targs: tuple, self: Any, dim: int, index: Any, value: Any, *,
                          reduce: str) -> Any:
    if reduce not in _SCATTER_REDUCE:
        return NotImplemented
    src = c("full", [], shape=list(targs[2].shape), fill_value=float(value),
            dtype=native_dtype(targs[0].dtype))
    return c("scatter_reduce", [self, _int64_index(targs, 2, index), src], dim=dim,
             reduce=_SCATTER_REDUCE[reduce])


@rule(aten.gather.default)
@torch_args
def _gather(targs: tuple, self: Any, dim: int, index: Any, sparse_grad: bool = False) -> Any:
    return c("gather", [self, _int64_index(targs, 2, index)], dim=dim)


@rule(aten.put.default)
@torch_args
def _put(targs: tuple, self: Any, index: Any, source: Any, accumulate: bool = False) -> Any:
    """``self`` with ``source``'s elements written (added, with ``accumulate``) at the flat
    positions ``index`` names, negative ones counted from the end: ``scatter`` or
    ``scatter_add`` on the flattened tensor, whose index check refuses positions out of range
    (naming the index as given).
    Repeated positions: the last write wins without ``accumulate`` (PyTorch's CPU order)."""
    x, idx_t, src_t = targs[0], targs[1], targs[2]
    if idx_t.dtype != torch.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {idx_t.dtype}")
    if x.dtype != src_t.dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {x.dtype} and source.dtype = {src_t.dtype}")
    if idx_t.numel() != src_t.numel():
        raise RuntimeError("put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {src_t.numel()}, "
                           f"index.numel() = {idx_t.numel()}")
    if idx_t.numel() == 0:
        return c("clone", [self])
    n = x.numel()
    flat = c("reshape", [c("contiguous", [self])], shape=[-1])
    idx = c("reshape", [index], shape=[-1])
    wraps = c("logical_and", [c("lt", [idx, 0]), c("ge", [idx, -n])])  # below -n: refused
    idx = c("where", [wraps, c("add", [idx, n]), idx])
    out = c("scatter_add" if accumulate else "scatter",
            [flat, idx, c("reshape", [source], shape=[-1])], dim=0)
    return c("reshape", [out], shape=list(x.shape))
