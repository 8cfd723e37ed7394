"""Ops whose output size is data: ``nonzero`` (``argwhere`` and boolean-mask indexing are built
on it by PyTorch) and ``masked_select``. The daemon answers fixed-size questions only
(``nonzero_static``, whose shape is known before its data: Note [Infer before compute] in
runtime/ops/op_def.h), so these read the count first, one round trip (PyTorch's CUDA
``nonzero`` waits for the GPU the same way), then ask for exactly that many coordinates."""

from __future__ import annotations

from typing import Any, Dict

import torch

from . import _transfer
from ._aten_map import c, rule
from ._pooling import bind
from ._special import _handles
from ._tensor import TensordTensor, contiguous_strides

aten = torch.ops.aten
_INT64 = _transfer.native_dtype(torch.int64)


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
