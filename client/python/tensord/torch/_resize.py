"""``resize_``, ``resize_as_`` and the functional ``resize`` on the device, with PyTorch's
semantics: what ``out=`` ops (``torch.add(a, b, out=torch.empty(0))``) and their reference
decompositions (``_maybe_resize_out``) call on their outputs.

Note [Resize keeps the storage]: PyTorch's ``resize_`` gives a tensor new sizes, strides
(contiguous, or ``memory_format``'s; unchanged where the sizes are) and keeps its storage
offset. Where the new geometry fits the tensor's storage, the storage stays and the tensor
becomes a view of it (shrinking, or growing back into elements a view does not reach); else a
new storage of ``offset + extent`` elements replaces it, its prefix the old storage's elements
in storage order. On the device a ``TensordTensor`` has no storage of its own (a wrapper), so
"the storage" is its daemon tensor's, and how many elements it holds for PyTorch is the
wrapper's ``untyped_storage().nbytes()``, or its ``_base``'s for a view (PyTorch's storage of a
view is its base's): a fit is an ``as_strided`` view of the daemon tensor, a growth a daemon
``empty`` plus one ``copy_`` of the old storage into its prefix. The wrapper's own metadata
(sizes, strides, storage size) changes below the Python key, by ``.data =`` of a wrapper of the
new geometry (which keeps the tensor's identity, ``_base`` and version counter).

A growth rebinds the tensor and its ``_base`` to the new storage, as PyTorch's shared
``StorageImpl`` does for both. Other tensors sharing the old storage (the base's other views,
``detach()``-ed copies), which the device cannot enumerate since its wrappers share no storage
object, keep the old daemon storage, where in PyTorch they would see the new one: the one
difference, and only after a growth. A payload-less tensor (Note [Lazy payload]) that grows
into a contiguous geometry at offset 0 stays payload-less: its old elements were never written.
The daemon bounds-checks every ``as_strided`` here (Note [as_strided bounds]), so a storage
smaller than PyTorch believes raises at the read, never touches another tensor's memory.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import torch

from . import _transfer
from ._aten_map import c
from ._meta import to_meta
from ._special import _handles
from ._tensor import DEVICE, TensordTensor, contiguous_strides

aten = torch.ops.aten


def _wrapper(like: TensordTensor, size: Sequence[int], stride: Sequence[int], offset: int,
             storage_elements: int) -> TensordTensor:
    """A payload-less wrapper of ``like``'s dtype with this geometry and storage size, whose
    metadata ``.data =`` copies into a resized tensor."""
    return torch.Tensor._make_wrapper_subclass(
        TensordTensor, size, strides=stride, storage_offset=offset, dtype=like.dtype,
        device=DEVICE, storage_size=storage_elements * like.element_size())


def _storage_elements(x: TensordTensor) -> int:
    """How many elements PyTorch's storage of ``x`` holds (Note [Resize keeps the storage])."""
    n = x.untyped_storage().nbytes()
    base = x._base
    if isinstance(base, TensordTensor):
        n = max(n, base.untyped_storage().nbytes())
    return n // x.element_size()


def _extent(size: Sequence[int], stride: Sequence[int]) -> int:
    """Elements from the first to one past the last that the geometry reaches (0 if empty)."""
    if any(s == 0 for s in size):
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(size, stride))


def _rebind(t: TensordTensor, payload: Any, size: Sequence[int], stride: Sequence[int],
            storage_elements: int) -> None:
    """Makes ``t`` the ``size``/``stride`` tensor at its own offset with daemon tensor
    ``payload`` (None: payload-less) and a storage of ``storage_elements``."""
    new = _wrapper(t, size, stride, t.storage_offset(), storage_elements)
    with torch.utils._mode_utils.no_dispatch():
        t.data = new
    t._td = payload


def _view_of(storage: Any, t: TensordTensor, size: Sequence[int], stride: Sequence[int],
             input_offset: int) -> Any:
    return c("as_strided", [storage], size=list(size), stride=list(stride),
             storage_offset=t.storage_offset(), input_offset=input_offset)


def resize(x: TensordTensor, size: Sequence[int],
           memory_format: Optional[torch.memory_format] = None) -> TensordTensor:
    """``x.resize_(size, memory_format=...)`` (Note [Resize keeps the storage])."""
    meta = to_meta(x)
    meta.resize_([int(s) for s in size], memory_format=memory_format)  # PyTorch's checks
    return _resize_like(x, meta)


def _resize_like(x: TensordTensor, meta: torch.Tensor) -> TensordTensor:
    """``x`` given ``meta``'s sizes and strides: ``x`` resized on the meta device by PyTorch's
    own ``resize_``/``resize_as_``, which chose them (and raised for a bad call)."""
    from ._dispatch import payload
    size, stride = tuple(meta.shape), meta.stride()
    if size == tuple(x.shape) and stride == x.stride():
        return x
    offset = x.storage_offset()
    need = offset + _extent(size, stride)
    have = _storage_elements(x)
    lazy = x._td is None and x._base is None and x._error is None
    if need <= have:  # the storage stays: a view of it
        _rebind(x, _view_of(payload(x), x, size, stride, offset), size, stride, have)
        return x
    if lazy and offset == 0 and stride == contiguous_strides(size):
        _rebind(x, None, size, stride, need)  # nothing written yet (Note [Lazy payload])
        return x
    storage = c("empty", [], shape=[need], dtype=_transfer.native_dtype(x.dtype))
    if have > 0 and not lazy:
        old = c("as_strided", [payload(x)], size=[have], stride=[1], storage_offset=0,
                input_offset=offset)
        c("copy_", [c("as_strided", [storage], size=[have], stride=[1], storage_offset=0), old])
    base = x._base
    if isinstance(base, TensordTensor):  # PyTorch's base shares the grown storage
        _rebind(base, _view_of(storage, base, base.shape, base.stride(), 0), base.shape,
                base.stride(), need)
    _rebind(x, _view_of(storage, x, size, stride, 0), size, stride, need)
    return x


def _bind(names: Sequence[str], args: tuple, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    return dict(zip(names, args), **kwargs)


@_handles(aten.resize_.default)
def resize_(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    a = _bind(("self", "size"), args, kwargs)
    return resize(a["self"], a["size"], a.get("memory_format"))


@_handles(aten.resize.default)
def resize_functional(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """The functional ``resize`` (functionalization's): a resized copy, as PyTorch makes it."""
    a = _bind(("self", "size"), args, kwargs)
    return resize(a["self"].clone(), a["size"], a.get("memory_format"))


@_handles(aten.resize_as_.default)
def resize_as_(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """``self.resize_(the_template.shape)``, restrided to ``memory_format`` if given
    (``preserve``: the template's suggested format): the strides PyTorch's meta
    ``resize_as_`` chooses."""
    a = _bind(("self", "the_template"), args, kwargs)
    meta = to_meta(a["self"])
    meta.resize_as_(to_meta(a["the_template"]), memory_format=a.get("memory_format"))
    return _resize_like(a["self"], meta)
