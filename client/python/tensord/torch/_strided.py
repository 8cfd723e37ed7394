"""``as_strided`` and ``as_strided_scatter`` on the daemon's ``as_strided`` view row: what
PyTorch's reference decompositions of ``diagonal``, ``diag_embed``, ``unfold``, ``trace`` ... and
the autograd formulas of views (``as_strided_backward``) are written in.

Note [as_strided offsets]: PyTorch's ``storage_offset`` counts from the start of the tensor's
storage. A ``TensordTensor`` is a wrapper without a storage of its own; its daemon tensor may sit
at another offset of a larger storage than PyTorch believes (a daemon ``to`` or ``reshape``
that returned an alias where PyTorch made a fresh tensor). Only the difference between the
requested offset and the wrapper's own ``storage_offset()`` is meaningful on both sides, so the
row gets both (``input_offset``) and applies the difference to the daemon tensor's real offset.
The daemon checks that every element of the view lies in the storage (Note [as_strided bounds]
in runtime/ops/strided_ops.cc); PyTorch's own argument checks are repeated here so that a bad
call raises at the program's line, as on the CPU.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import torch

from ._aten_map import c
from ._special import _handles
from ._tensor import TensordTensor, contiguous_strides

aten = torch.ops.aten
prims = torch.ops.prims


def _check(size: Sequence[int], stride: Sequence[int], offset: int) -> None:
    """PyTorch's own checks of an as_strided geometry (its error wording)."""
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: as_strided with size "
                           f"{list(size)} and stride {list(stride)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"as_strided: negative size in {list(size)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")


def strided_view(x: TensordTensor, size: Sequence[int], stride: Sequence[int],
                 storage_offset: Optional[int]) -> TensordTensor:
    """``x.as_strided(size, stride, storage_offset)`` on the daemon (Note [as_strided
    offsets])."""
    from . import _dispatch
    size, stride = [int(s) for s in size], [int(s) for s in stride]
    offset = x.storage_offset() if storage_offset is None else int(storage_offset)
    _check(size, stride, offset)
    native = c("as_strided", [_dispatch.payload(x)], size=size, stride=stride,
               storage_offset=offset, input_offset=x.storage_offset())
    return TensordTensor(native, size, stride, offset, x.dtype)


def _args(names: Sequence[str], args: tuple, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    return dict(zip(names, args), **kwargs)


@_handles(aten.as_strided.default)
def as_strided(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    a = _args(("self", "size", "stride", "storage_offset"), args, kwargs)
    return strided_view(a["self"], a["size"], a["stride"], a.get("storage_offset"))


@_handles(aten.as_strided_scatter.default, prims.as_strided_scatter.default)
def as_strided_scatter(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """A contiguous copy of ``input`` with ``src`` written into its as_strided view: PyTorch's
    definition, for the contiguous inputs whose copy has ``input``'s layout (others take the
    decomposition)."""
    from . import _dispatch
    a = _args(("input", "src", "size", "stride", "storage_offset"), args, kwargs)
    x, src = a["input"], a["src"]
    if not (type(x) is TensordTensor and type(src) is TensordTensor and x.is_contiguous()
            and src.dtype == x.dtype):
        from torch._decomp import decomposition_table
        return decomposition_table[aten.as_strided_scatter.default](
            x, src, a["size"], a["stride"], a.get("storage_offset"))
    out = TensordTensor(c("clone", [_dispatch.payload(x)]), x.shape,
                        contiguous_strides(x.shape), 0, x.dtype)
    offset = a.get("storage_offset")
    view = strided_view(out, a["size"], a["stride"],
                        offset if offset is not None else 0)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"as_strided_scatter: expected src to have a size equal to the "
                           f"slice of self. src size = {list(src.shape)}, slice size = "
                           f"{list(view.shape)}")
    c("copy_", [_dispatch.payload(view), _dispatch.payload(src)])
    return out


@_handles(prims.copy_to.default)
def copy_to(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """``prims.copy_to(a, b)``: ``b`` copied into ``a`` (the reference decompositions'
    ``copy_``; ``diagonal_backward`` writes its gradient into a view of zeros with it)."""
    from ._special import copy_
    a = _args(("a", "b"), args, kwargs)
    return copy_(aten.copy_.default, (a["a"], a["b"]), {})
