"""Ops whose output size is data: ``nonzero``, ``argwhere`` and ``masked_select``.

The daemon answers fixed-size questions only (``nonzero_static``: an output shape is known before
any data, Note [Infer before compute] in runtime/ops/op_def.h), so each of these reads the
count first, one round trip (PyTorch's CUDA ``nonzero`` waits for the GPU the same way), then
asks for exactly that many coordinates. ``masked_select``'s gradient is ``index_select``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Tuple, Union

import numpy as np

from . import _calls, _dtype

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["nonzero", "argwhere", "masked_select"]


def _count(t: Tensor) -> int:
    """How many elements of ``t`` are nonzero (NaN counts): the one wait."""
    return int(_calls.call("sum", [_calls.call("ne", [t, 0])], {"dtype": _dtype.int64}).item())


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Union[Tensor, Tuple[Tensor, ...]]:  # noqa: A002
    """``torch.nonzero``: the [n, input.dim()] int64 coordinates of the nonzero elements, in
    row-major order; ``as_tuple=True``: one 1-d tensor per dimension."""
    coords = _calls.call("nonzero_static", [input], {"size": _count(input)})
    if not as_tuple:
        return coords
    if input.dim() == 0:  # PyTorch treats a 0-d input as 1-d here
        return (_calls.call("reshape", [coords], {"shape": [-1, 1]})[:, 0],)
    return tuple(coords[:, d] for d in range(input.dim()))


def argwhere(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.argwhere``: ``nonzero(input)``."""
    return nonzero(input)  # type: ignore[return-value]


def masked_select(input: Tensor, mask: Tensor) -> Tensor:  # noqa: A002
    """``torch.masked_select``: the elements of ``input`` where the bool ``mask`` (both
    broadcast to one shape) is True, as a 1-d tensor in row-major order."""
    if mask.dtype != _dtype.bool_:
        raise TypeError(f"masked_select: expected a bool mask, got {mask.dtype}")
    try:
        shape = list(np.broadcast_shapes(tuple(input.shape), tuple(mask.shape)))
    except ValueError:
        raise ValueError(f"masked_select: the shape of the mask {list(mask.shape)} does not "
                         f"broadcast with the input's {list(input.shape)}") from None
    flat_x = _calls.call("reshape", [_calls.call("expand", [input], {"size": shape})], {"shape": [-1]})
    flat_mask = _calls.call("reshape", [_calls.call("expand", [mask], {"size": shape})], {"shape": [-1]})
    rows = _calls.call("nonzero_static", [flat_mask], {"size": _count(flat_mask)})
    return _calls.call("index_select", [flat_x, _calls.call("reshape", [rows], {"shape": [-1]})], {"dim": 0})


class DataSizedMethods:
    """Mixed into ``Tensor``: ``x.nonzero()``, ``x.argwhere()``, ``x.masked_select(mask)``,
    ``x.unique()``, ``x.unique_consecutive()``."""

    __slots__ = ()

    def nonzero(self, *, as_tuple: bool = False) -> Any:
        return nonzero(self, as_tuple=as_tuple)  # type: ignore[arg-type]

    def argwhere(self) -> Any:
        return argwhere(self)  # type: ignore[arg-type]

    def masked_select(self, mask: Any) -> Any:
        return masked_select(self, mask)  # type: ignore[arg-type]

    def unique(self, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
               return_counts: bool = False, dim: Any = None) -> Any:
        from ._unique import unique
        return unique(self, sorted, return_inverse, return_counts, dim)  # type: ignore[arg-type]

    def unique_consecutive(self, return_inverse: bool = False, return_counts: bool = False,
                           dim: Any = None) -> Any:
        from ._unique import unique_consecutive
        return unique_consecutive(self, return_inverse, return_counts,  # type: ignore[arg-type]
                                  dim)
