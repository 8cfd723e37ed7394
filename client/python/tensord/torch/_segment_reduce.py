"""``segment_reduce`` and ``_segment_reduce_backward`` as the daemon's rows of the same names
(runtime/ops/segment_reduce_ops.cc): sum, mean, max, min and prod over segments given by
``lengths`` or ``offsets`` along ``axis``, with ``initial`` and ``unsafe``. The rows take the
bounds as their second input (int64; other integer types converted) and say which it is in
their ``offsets`` attribute. ``indices`` (not implemented by PyTorch either) declines."""

from __future__ import annotations

from typing import Any, Optional

import torch

from ._aten_map import c, rule

aten = torch.ops.aten


def _bounds(lengths: Any, offsets: Any, indices: Any = None) -> Optional[tuple]:
    if indices is not None or (lengths is None) == (offsets is None):
        return None
    b = lengths if offsets is None else offsets
    if b.dtype.name != "int64":
        b = c("to", [b], dtype="int64")
    return b, offsets is not None


def _attrs(reduce: str, axis: int, is_offsets: bool, unsafe: bool, initial: Any) -> dict:
    return dict(reduce=str(reduce), axis=int(axis), offsets=is_offsets, unsafe=bool(unsafe),
                has_initial=initial is not None,
                initial=None if initial is None else float(initial))


@rule(aten.segment_reduce.default)
def _segment_reduce(data: Any, reduce: str, *, lengths: Any = None, indices: Any = None,
                    offsets: Any = None, axis: int = 0, unsafe: bool = False,
                    initial: Any = None) -> Any:
    b = _bounds(lengths, offsets, indices)
    if b is None:
        return NotImplemented
    return c("segment_reduce", [data, b[0]], **_attrs(reduce, axis, b[1], unsafe, initial))


@rule(aten._segment_reduce_backward.default)
def _segment_reduce_backward(grad: Any, output: Any, data: Any, reduce: str, *,
                             lengths: Any = None, offsets: Any = None, axis: int = 0,
                             initial: Any = None) -> Any:
    b = _bounds(lengths, offsets)
    if b is None:
        return NotImplemented
    return c("_segment_reduce_backward", [grad, output, data, b[0]],
             **_attrs(reduce, axis, b[1], True, initial))
