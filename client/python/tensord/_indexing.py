"""``tensor[index]``: basic slicing and integer indexing, mapped onto catalog view ops.

Indices are normalized here against the tensor's shape (Python's rules: negative indices count
from the end, slices clamp), so the daemon only sees in-range ``select(dim, index)``,
``narrow(dim, start, length)`` / ``slice(dim, start, end, step)`` and ``unsqueeze(dim)``.
Tensor (advanced) indices are not supported yet.
"""

from __future__ import annotations

import operator
from typing import Any, List

import numpy as np

from . import _tensor


def _expand(index: tuple, ndim: int) -> List[Any]:
    n_ellipsis = sum(1 for i in index if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out: List[Any] = []
    for i in index:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(i)
    return out


def getitem(t: "_tensor.Tensor", index: Any) -> "_tensor.Tensor":
    """``t[index]`` for ints, slices (step > 0), None and Ellipsis."""
    if not isinstance(index, tuple):
        index = (index,)
    shape = list(t.shape)
    out = t
    dim = 0  # in the result so far
    src = 0  # in t, for messages (PyTorch's)
    for i in _expand(index, len(shape)):
        if i is None:
            out = _tensor.call("unsqueeze", [out], {"dim": dim}, why="indexing with None")
            shape.insert(dim, 1)
            dim += 1
        elif isinstance(i, slice):
            size = shape[dim]
            if i.step is not None and operator.index(i.step) <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = i.indices(size)
            length = len(range(start, stop, step))
            if (start, length, step) != (0, size, 1):
                out = _slice(out, dim, start, stop, step, length)
            shape[dim] = length
            dim += 1
            src += 1
        elif isinstance(i, (bool, np.bool_)):
            raise NotImplementedError("indexing with a bool is not supported yet")
        elif isinstance(i, (_tensor.Tensor, list, np.ndarray)):
            raise NotImplementedError("indexing with tensors or lists (advanced indexing) is not "
                                      "supported yet; use basic slices and integers")
        else:
            k = operator.index(i)
            size = shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {src} with size "
                                 f"{size}")
            out = _tensor.call("select", [out], {"dim": dim, "index": k % size},
                               why="integer indexing")
            shape.pop(dim)
            src += 1
    return out


def _slice(t: "_tensor.Tensor", dim: int, start: int, stop: int, step: int,
           length: int) -> "_tensor.Tensor":
    catalog = t._session.catalog
    if step == 1 and "narrow" in catalog:
        return _tensor.call("narrow", [t], {"dim": dim, "start": start, "length": length})
    if "slice" in catalog:
        return _tensor.call("slice", [t], {"dim": dim, "start": start,
                                           "end": max(stop, start), "step": step})
    raise _tensor.missing_op("slice", t._session,
                             "slicing needs 'slice', or 'narrow' for step 1")
