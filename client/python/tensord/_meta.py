"""A tensor's metadata as the client keeps it (``Tensor._info``), made from the daemon's
``TensorMeta``; a module of its own so that the session can make it without importing
``_tensor`` (which imports the session)."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from . import _dtype, _errors
from ._dtype import Size


class _Meta(NamedTuple):
    shape: Size
    dtype: Optional[_dtype.dtype]
    device: str
    requires_grad: bool
    error: Optional[_errors.Error]
    is_none: bool = False  # the handle names None (a .grad never set, an unused input)
    is_leaf: bool = True
    grad_fn: str = ""  # the graph node that made it, e.g. "MulBackward0"


def _meta_from_proto(m: Any) -> _Meta:
    err = _errors.from_status(m.error) if m.HasField("error") and m.error.code else None
    return _Meta(Size(m.shape), _dtype.BY_PROTO.get(m.dtype), m.device, m.requires_grad, err,
                 m.is_none, m.is_leaf, m.grad_fn)
