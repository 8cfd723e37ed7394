"""Reading a tensor's values, and Python's conversions and protocols built on them
(``numpy()``, ``item()``, ``repr``, ``bool``/``float``/``int``, ``len``, iteration).

A mixin of ``Tensor`` (``__slots__ = ()``: the slots are ``Tensor``'s). Each read waits for the
values and downloads them (``Session.get``: the stream, the shared-memory region or the bulk
socket); nothing here is on the per-op path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Optional, Tuple

import numpy as np

from . import _dtype, _format
from ._errors import Error
from ._meta import _Meta, _meta_from_proto
from ._site import call_site

if TYPE_CHECKING:
    from ._tensor import Number, Tensor


class TensorValues:
    """Mixed into ``Tensor``; see the module docstring."""

    __slots__ = ()

    def _download(self, maybe_big: bool = True) -> Tuple[np.ndarray, _Meta]:
        info = self._info
        nbytes = (info.shape.numel() * info.dtype.itemsize if info is not None and info.dtype
                  and info.error is None else self._session.peek_nbytes(self._handle))
        try:
            meta_pb, buf = self._session.get(self._handle, call_site(), nbytes, None, maybe_big)
        except Error as e:
            raise self._session.raised(e) from None
        self._session.raise_checked()  # Note [Deferred backward errors] (_batch.py)
        info = _meta_from_proto(meta_pb) if meta_pb is not None else self._meta()
        if self._info is None:
            self._info = info
        return _dtype.from_wire_bytes(buf, info.dtype, tuple(info.shape)), info

    def numpy(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        """The values as a new NumPy array (bfloat16 arrives as float32). Waits for them.

        ``out``: an array of the tensor's shape and NumPy dtype, C-contiguous and writeable, to
        write them into instead (returned). In a shared buffer (``tensord.empty_shared``) that
        costs one copy, the daemon's."""
        if out is None:
            return self._download()[0]
        info = self._meta()  # a spoiled value raises its error here
        want = info.dtype.numpy_dtype
        if tuple(out.shape) != tuple(info.shape) or out.dtype != want:
            raise ValueError(f"numpy(out=): the tensor needs an array of shape "
                             f"{tuple(info.shape)} and dtype {want}, got {tuple(out.shape)} "
                             f"{out.dtype}")
        if not (out.flags.c_contiguous and out.flags.writeable):
            raise ValueError("numpy(out=): the array must be C-contiguous and writeable")
        if info.dtype is _dtype.bfloat16:  # converted on the client: no direct path
            np.copyto(out, self._download()[0])
            return out
        nbytes = info.shape.numel() * info.dtype.itemsize
        try:
            self._session.get(self._handle, call_site(), nbytes, out.reshape(-1).view(np.uint8))
        except Error as e:
            raise self._session.raised(e) from None
        self._session.raise_checked()
        return out

    def tolist(self) -> Any:
        """The values as (nested) Python lists, or a Python number for a 0-dim tensor."""
        return self.numpy().tolist()

    def item(self) -> Number:
        """The value of a one-element tensor as a Python number."""
        a = self._download(maybe_big=False)[0]  # one element: the stream
        if a.size != 1:
            raise ValueError(f"a Tensor with {a.size} elements cannot be converted to Scalar")
        return a.reshape(-1)[0].item()

    def __array__(self, dtype: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        if self._session.closed:
            return f"<tensord.Tensor handle={self._handle} of a closed session>"
        values, info = self._download()
        rg = self._rg if self._rg is not None else info.requires_grad
        return _format.format_tensor(values, info.dtype, info.device, rg,
                                     grad_fn=info.grad_fn if rg else "")

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __bool__(self) -> bool:
        a = self.numpy()
        if a.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(a.reshape(-1)[0])

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __len__(self) -> int:
        shape = self._meta().shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __iter__(self) -> Iterator["Tensor"]:
        if not self._meta().shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self)))
