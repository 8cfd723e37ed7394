"""``Tensor``: a handle to a value that lives in the daemon (ops run through ``_calls``).

A Tensor owns one handle of one session. Creating it queues the command that fills the handle
and returns at once; reading metadata (``shape``, ``dtype``) uses the daemon's Ack (usually
already there), reading values (``numpy()``, ``item()``, ``repr``) downloads them. Dropping the
last reference queues a batched ``Release``.

Tensor's methods are split by concern into ``__slots__ = ()`` mixins: ``_tensor_methods``
(PyTorch's methods and operators), ``_tensor_conversions`` (dtype and device: ``to``, ``cpu``,
``float`` ...), ``_autograd_methods`` (``requires_grad``, ``grad``, ``backward`` ...) and
``_tensor_values`` (reading values: ``numpy()``, ``item()``, ``repr`` ...).

Errors stay with the values they spoil: a tensor produced by a failing op raises that op's error
(with the user's call site) when its metadata or values are read.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from . import _calls, _dtype, _fast
from ._autograd_methods import AutogradMethods
# The op-running functions live in _calls; tensord code imports them from here too.
from ._calls import (Number, _session_of, _wrap_dim, binary, binary_method,  # noqa: F401
                     call, call_op, missing_op, scalar_dtype, upload)
from ._data_sized import DataSizedMethods
from ._dtype import Size
from ._meta import _Meta  # noqa: F401 (_Meta: the type of Tensor._info)
from ._session import Session
from ._tensor_conversions import TensorConversions
from ._tensor_methods import TensorMethods
from ._tensor_values import TensorValues
from ._wire import varint


class Tensor(TensorValues, TensorMethods, TensorConversions, AutogradMethods,
             DataSizedMethods):
    """A tensor that lives in the daemon. Create one with ``tensord.tensor``, ``tensord.zeros``,
    ``tensord.randn`` ... or as the result of an op; never directly."""

    # _hv: the handle's varint, as the Calls that read this tensor encode it
    __slots__ = ("_session", "_handle", "_hv", "_seq", "_info", "_dev", "_rg", "__weakref__")
    # As torch.Tensor's: NumPy's scalars and arrays defer to our reflected operators
    # (np.float64(0.5) - x is a Tensor, not an ndarray made through __array__).
    __array_priority__ = 1000

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("create tensors with tensord.tensor(), tensord.zeros(), ... ")

    @classmethod
    def _make(cls, session: Session, handle: int, seq: int, dev: Optional[str],
              hv: Optional[bytes] = None) -> "Tensor":
        """``handle``'s Tensor; ``hv``: its varint, if the caller has it."""
        t = object.__new__(cls)
        t._session = session
        t._handle = handle
        t._hv = varint(handle) if hv is None else hv
        t._seq = seq
        t._info = None
        t._dev = dev  # requested device, if known ("" / None: the session default)
        t._rg = None  # requires_grad as set by this client since the Ack (None: the Ack's)
        return t

    def _release(self) -> None:
        """``__del__``'s Python twin (``_fast.finalizer``): queues the handle's release."""
        try:
            s = self._session
            if s._entries:  # a batch is open: its flush drains releases (Batcher.release)
                s._released.append(self._handle)
            else:
                s.release(self._handle)
        except Exception:  # interpreter shutdown, half-built object
            pass

    __del__ = _fast.finalizer(_release)

    # ------------------------------------------------------------- metadata

    def _meta(self) -> _Meta:
        info = self._info
        if info is None:
            info = self._session.meta(self._handle, self._seq, self)
        if info.error is not None:
            raise self._session.raised(info.error)
        return info

    @property
    def shape(self) -> Size:
        """The tensor's shape (from the daemon's Ack; raises if the value is spoiled)."""
        return self._meta().shape

    def size(self, dim: Optional[int] = None) -> Union[Size, int]:
        """The shape, or the size of dimension ``dim``."""
        shape = self._meta().shape
        return shape if dim is None else shape[_wrap_dim(dim, len(shape))]

    @property
    def dtype(self) -> _dtype.dtype:
        """The element type."""
        return self._meta().dtype  # type: ignore[return-value]

    @property
    def device(self) -> _dtype.device:
        """The device the tensor lives on."""
        return _dtype.device(self._meta().device)

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a CUDA device."""
        return self._meta().device.startswith("cuda")

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._meta().shape)

    def dim(self) -> int:
        """The number of dimensions."""
        return len(self._meta().shape)

    def numel(self) -> int:
        """The number of elements."""
        return self._meta().shape.numel()

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def session(self) -> Session:
        """The session that holds this tensor."""
        return self._session

    __hash__ = object.__hash__


def is_tensor(obj: Any) -> bool:
    """True if ``obj`` is a tensord Tensor."""
    return isinstance(obj, Tensor)


_calls.bind_tensor_class(Tensor)
_fast.init(Tensor)
