"""Ops whose output size is data: ``nonzero`` (``argwhere`` and boolean-mask indexing are built
on it by PyTorch), ``masked_select``, ``repeat_interleave`` with a tensor of repeats, and
``unique``/``unique_consecutive`` over all elements (``tensord._unique``'s commands). The daemon
answers fixed-size questions only (``nonzero_static``, whose shape is known before its data:
Note [Infer before compute] in runtime/ops/op_def.h), so these read the count first, one round
trip (PyTorch's CUDA ``nonzero`` waits for the GPU the same way), then ask for exactly that many
coordinates."""

from __future__ import annotations

from typing import Any, Dict

import torch

from .._unique import unique_parts
from . import _fallback, _transfer
from ._aten_map import c, rule
from ._special import _handles
from ._tensor import TensordTensor, contiguous_strides

aten = torch.ops.aten
_INT64 = _transfer.native_dtype(torch.int64)


def bind(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The op's arguments by name, defaults filled in."""
    out = {}
    for i, a in enumerate(func._schema.arguments):
        if i < len(args) and not a.kwarg_only:
            out[a.name] = args[i]
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
        else:
            out[a.name] = a.default_value if a.has_default_value() else None
    return out


def _payload(t: TensordTensor) -> Any:
    from ._dispatch import payload
    return payload(t)


def _count(p: Any) -> int:
    """How many elements of payload ``p`` are nonzero (NaN counts): the one wait."""
    n = c("sum", [c("ne", [p, 0])], dtype=_INT64)
    return int(_transfer.download(n, torch.int64).item())


def _fresh(p: Any, shape: tuple, dtype: torch.dtype) -> TensordTensor:
    return TensordTensor(p, shape, contiguous_strides(shape), 0, dtype)


@rule(aten.nonzero_static.default)
def _nonzero_static(self: Any, *, size: int, fill_value: int = -1) -> Any:
    return c("nonzero_static", [self], size=size, fill_value=fill_value)


@_handles(aten.nonzero.default)
def nonzero(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    x = bind(func, args, kwargs)["self"]
    p = _payload(x)
    n = _count(p)
    return _fresh(c("nonzero_static", [p], size=n), (n, x.dim()), torch.int64)


@_handles(aten.masked_select.default)
def masked_select(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    a = bind(func, args, kwargs)
    x, mask = a["self"], a["mask"]
    if mask.dtype != torch.bool:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shape = list(torch.broadcast_shapes(x.shape, mask.shape))
    flat_x = c("reshape", [c("expand", [_payload(x)], size=shape)], shape=[-1])
    flat_mask = c("reshape", [c("expand", [_payload(mask)], size=shape)], shape=[-1])
    n = _count(flat_mask)
    rows = c("reshape", [c("nonzero_static", [flat_mask], size=n)], shape=[-1])
    return _fresh(c("index_select", [flat_x, rows], dim=0), (n,), x.dtype)


@_handles(aten.repeat_interleave.Tensor)
def repeat_interleave(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """The index behind ``x.repeat_interleave(repeats, dim)``: ``i`` repeated ``repeats[i]``
    times. A 1 is added where each element's run starts (at the running total of the repeats
    before it; zero repeats stack there) and a running sum of those marks is the index."""
    a = bind(func, args, kwargs)
    repeats = a["repeats"]
    if repeats.dim() != 1 or repeats.dtype not in (torch.int64, torch.int32):
        raise RuntimeError("repeat_interleave: repeats must be a 1-d int64 or int32 tensor, "
                           f"got shape {list(repeats.shape)} and {repeats.dtype}")
    r = c("to", [_payload(repeats)], dtype=_INT64)
    total = a["output_size"]
    if total is None:  # the one wait: the repeats themselves (n numbers), checked here
        host = _transfer.download(r, torch.int64)
        if bool((host < 0).any()):
            raise RuntimeError("repeat_interleave: repeats can not be negative, got "
                               f"{host[host < 0][0].item()}")
        total = int(host.sum().item())
    n = repeats.shape[0]
    if total == 0 or n == 0:
        return _fresh(c("zeros", [], shape=[0], dtype=_INT64), (0,), torch.int64)
    starts = c("narrow", [c("cumsum", [r], dim=0)], dim=0, start=0, length=n - 1)
    marks = c("scatter_add", [c("zeros", [], shape=[total + 1], dtype=_INT64), starts,
                              c("ones", [], shape=[n - 1], dtype=_INT64)], dim=0)
    index = c("narrow", [c("cumsum", [marks], dim=0)], dim=0, start=0, length=total)
    return _fresh(c("contiguous", [index]), (total,), torch.int64)


def _unique(x: TensordTensor, sort: bool, want_inverse: bool, want_counts: bool) -> tuple:
    """(values, inverse in x's shape, counts), empty int64 tensors for those not asked for (as
    PyTorch's CPU kernels return them)."""
    def call(name: str, inputs: list, attrs: dict) -> Any:
        return c(name, inputs, **attrs)

    n = x.numel()
    flat = c("reshape", [_payload(x)], shape=[-1])
    values, inverse, counts, k = unique_parts(call, _count, flat, n, sort, want_inverse,
                                              want_counts)
    empty = _fresh(c("zeros", [], shape=[0], dtype=_INT64), (0,), torch.int64)
    return (_fresh(c("contiguous", [values]), (k,), x.dtype),
            _fresh(c("reshape", [inverse], shape=list(x.shape)), tuple(x.shape), torch.int64)
            if want_inverse else empty,
            _fresh(counts, (k,), torch.int64) if want_counts else empty)


@_handles(aten._unique2.default)
def unique2(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """``sorted=False`` sorts too (PyTorch's CPU kernel does the same)."""
    a = bind(func, args, kwargs)
    return _unique(a["self"], True, a["return_inverse"], a["return_counts"])


@_handles(aten._unique.default)
def unique(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    a = bind(func, args, kwargs)
    return _unique(a["self"], True, a["return_inverse"], False)[:2]


@_handles(aten.unique_consecutive.default)
def unique_consecutive(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    a = bind(func, args, kwargs)
    if a["dim"] is not None:  # unique runs of slices: not on the daemon yet
        return _fallback.run(func, args, kwargs)
    return _unique(a["self"], False, a["return_inverse"], a["return_counts"])
