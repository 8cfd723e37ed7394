"""Output metadata from PyTorch's own meta functions, on the client: no op waits for the daemon.

``run(func, args, kwargs)`` runs ``func`` on meta tensors standing for the tensord ones (same
sizes, strides, dtype); a bad call raises PyTorch's own error here, at the program's line.

Note [Meta cache]: PyTorch's meta functions cost ~100-800 us a call (many are Python
references), far more than the op's command. Output metadata depends only on the inputs'
metadata and the other arguments, so ``run`` keeps the outputs' (shape, stride, offset, dtype)
by a key of exactly those, and later calls build the meta outputs from it without running the
meta function. For pointwise ops (``torch.Tag.pointwise``) a Python number's value cannot change
the metadata, only its type, so the key holds its type (an optimizer's changing step sizes
still hit). Ops returning anything but tensors are not cached.

Ops PyTorch has no meta function for (``multi_margin_loss_backward``'s) take one from
``META_FNS``, which the rule modules mapping them fill in.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.utils._pytree import tree_map

from ._tensor import TensordTensor

_META = torch.device("meta")
_cache: Dict[Any, Any] = {}
META_FNS: Dict[Any, Callable[..., Any]] = {}
"""op -> its outputs on meta tensors, for the ops PyTorch has no meta function for."""
_MAX_ENTRIES = 1 << 16
_empty_strided = torch.empty_strided


def to_meta(x: Any) -> Any:
    if isinstance(x, TensordTensor):
        return _empty_strided(x.shape, x.stride(), dtype=x.dtype, device=_META)
    if isinstance(x, torch.device) and x.type == "tensord":
        return _META
    if isinstance(x, torch.Tensor) and x.ndim == 0 and x.device.type == "cpu":
        # A CPU scalar tensor mixes with a device's tensors, as in PyTorch: on meta too (some
        # references allow it only beside a device they name, e.g. masked_fill's value)
        return _empty_strided((), (), dtype=x.dtype, device=_META)
    return x


_NUMBERS = (int, float, bool)


def _key_of(x: Any, pointwise: bool) -> Any:
    t = type(x)
    if t is TensordTensor:
        return (x.shape, x.stride(), x.dtype)
    if t in _NUMBERS:  # the type too: 1, 1.0 and True are equal keys
        return t if pointwise else (t, x)
    if isinstance(x, torch.Tensor):
        if isinstance(x, TensordTensor):
            return (x.shape, x.stride(), x.dtype)
        return (x.shape, x.stride(), x.dtype, x.device.type)
    if t is list or t is tuple or isinstance(x, (list, tuple)):
        if x and type(x[0]) is TensordTensor:  # cat's, stack's tensors
            return tuple([(v.shape, v.stride(), v.dtype) if type(v) is TensordTensor
                          else _key_of(v, pointwise) for v in x])
        if all(type(v) is int for v in x):  # sizes and dims: the common list
            return (list, *x)
        return tuple(_key_of(v, pointwise) for v in x)
    if pointwise and isinstance(x, _NUMBERS):
        return type(x)
    if isinstance(x, (int, float, bool, str, type(None), torch.dtype, torch.device,
                      torch.memory_format, torch.layout)):
        return (type(x), x)
    raise TypeError  # not keyable: run the meta function


# id(op) -> (op, pointwise): the op kept alive, so that its id in a key (below) names it only
_ops: Dict[int, Tuple[Any, bool]] = {}


def is_pointwise(func: Any) -> bool:
    info = _ops.get(id(func))
    if info is None:
        info = _ops[id(func)] = (func, torch.Tag.pointwise in func.tags)
    return info[1]


def key(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Optional[tuple]:
    """The cache key of a call: the op (its id: Note [OpTable]), its tensors' metadata and its
    other arguments."""
    fid = id(func)
    info = _ops.get(fid)
    pointwise = info[1] if info is not None else is_pointwise(func)
    try:
        return (fid, *[_key_of(a, pointwise) for a in args],
                tuple([(k, _key_of(v, pointwise)) for k, v in kwargs.items()]) if kwargs else ())
    except TypeError:
        return None


def _describe(out: Any) -> Optional[Any]:
    if isinstance(out, torch.Tensor):
        return (tuple(out.shape), out.stride(), out.storage_offset(), out.dtype)
    if isinstance(out, (list, tuple)):
        parts: List[Any] = []
        for o in out:
            d = _describe(o)
            if d is None:
                return None
            parts.append(d)
        return (type(out), tuple(parts))
    return None


def _rebuild(d: Any) -> Any:
    if type(d[0]) is type:  # a tuple or list of outputs
        return d[0](_rebuild(p) for p in d[1])
    shape, stride, offset, dtype = d
    return _MetaOut(shape, stride, offset, dtype)


class _MetaOut:
    """A cached meta output: what ``_dispatch.wrap_outputs`` reads of a meta tensor."""

    __slots__ = ("shape", "_stride", "_offset", "dtype")

    def __init__(self, shape: Tuple[int, ...], stride: Tuple[int, ...], offset: int,
                 dtype: torch.dtype) -> None:
        self.shape, self._stride, self._offset, self.dtype = shape, stride, offset, dtype

    def stride(self) -> Tuple[int, ...]:
        return self._stride

    def storage_offset(self) -> int:
        return self._offset


def is_meta_out(x: Any) -> bool:
    return isinstance(x, (torch.Tensor, _MetaOut))


_NO_KEY = object()


def run(func: Any, args: Any, kwargs: Any, cache_key: Any = _NO_KEY) -> Any:
    """``func``'s outputs on meta tensors (a tensor, a tuple/list of them, or a non-tensor), or
    their cached descriptions (Note [Meta cache]). ``cache_key``: ``key(func, args, kwargs)`` if
    the caller has it."""
    k = key(func, args, kwargs) if cache_key is _NO_KEY else cache_key
    if k is not None:
        d = _cache.get(k)
        if d is not None:
            return _rebuild(d)
    margs, mkwargs = tree_map(to_meta, (args, kwargs))
    out = META_FNS.get(func, func)(*margs, **mkwargs)
    if k is not None and len(_cache) < _MAX_ENTRIES:
        d = _describe(out)
        if d is not None:
            _cache[k] = d
    return out
