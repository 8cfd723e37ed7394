"""PyTorch signatures for the daemon's one-dim scan rows (runtime/ops/scan_ops.cc).

``cummax``/``cummin``/``mode`` return ``return_types`` named tuples ``(values, indices)``;
``searchsorted`` takes PyTorch's keyword arguments (``out_int32``, ``right``, ``side``,
``sorter``) and a Python number as the values. ``logcumsumexp`` needs no wrapper (the catalog's
``tensord.logcumsumexp(input, dim)``). Each is a module-level function and, through
``TensorMethods``, a method.
"""

from __future__ import annotations

import operator
from typing import Any, Optional

from ._multi_ops import return_types
from ._tensor import Tensor, call

__all__ = ["cummax", "cummin", "mode", "searchsorted"]


def _values_indices(name: str, input: Tensor, attrs: dict) -> Any:
    values, indices = call(name, [input], attrs, num_outputs=2)
    return getattr(return_types, name)(values, indices)


def cummax(input: Tensor, dim: int) -> Any:
    """``torch.cummax(input, dim)``: ``(values, indices)`` of the running maximum; ties take the
    later index, NaN propagates."""
    return _values_indices("cummax", input, {"dim": operator.index(dim)})


def cummin(input: Tensor, dim: int) -> Any:
    """``torch.cummin(input, dim)``: as ``cummax``, for the running minimum."""
    return _values_indices("cummin", input, {"dim": operator.index(dim)})


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """``torch.mode(input, dim=-1, keepdim=False)``: ``(values, indices)``, the smallest of the
    most frequent values and the index of its last occurrence (PyTorch's CPU rule)."""
    return _values_indices("mode", input, {"dim": operator.index(dim), "keepdim": keepdim})


def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: Optional[str] = None,
                 sorter: Optional[Tensor] = None) -> Tensor:
    """``torch.searchsorted``: where each of ``input`` (a tensor or a number) goes in its row of
    ``sorted_sequence`` to keep it sorted; ``right=True`` or ``side="right"``: after equal
    values; ``sorter``: the int64 indices that sort each row."""
    inputs = [sorted_sequence, input] + ([sorter] if sorter is not None else [])
    return call("searchsorted", inputs,
                {"out_int32": out_int32, "right": right, "side": side or None})
