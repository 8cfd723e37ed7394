"""Running ops: ``call``, the one way ops run, and what it shares with the operator methods
(``binary_method``) and uploads (``upload``).

Split from ``_tensor`` so that the classes of Tensor's methods (``_tensor_methods``,
``_tensor_conversions``, ``_autograd_methods``, ``_data_sized``), which run ops, import this
module and ``_tensor`` builds ``Tensor`` from them without an import cycle. The results are
``Tensor`` objects: the class is bound here once, by ``_tensor`` when it defines it
(``bind_tensor_class``), as ``_fast.init`` binds it for the C path; nothing runs an op before
``tensord`` is imported.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _context, _dtype, _fast
from ._catalog import OpInfo, encode_attrs
from ._dtype import Size
from ._meta import _Meta
from ._site import call_site, site_field, site_string
from ._wire import attr_fields

if TYPE_CHECKING:
    from ._session import Session

#: ``_tensor.Tensor`` once ``_tensor`` is imported (``bind_tensor_class``)
Tensor: Any = None


def bind_tensor_class(cls: type) -> None:
    """Called once by ``_tensor`` with the ``Tensor`` class: ops return instances of it."""
    global Tensor
    Tensor = cls


Number = Union[int, float, bool]
_SCALARS = (int, float, bool, np.number, np.bool_)
_new = object.__new__


def missing_op(name: str, session: Session, why: str = "") -> NotImplementedError:
    return NotImplementedError(
        f"the tensord daemon at {session.address} has no op '{name}' in its catalog"
        + (f" ({why})" if why else "") + "; it may be added by a newer daemon")


def _session_of(values: Sequence[Any]) -> Session:
    for v in values:
        if isinstance(v, Tensor):
            return v._session
        if isinstance(v, (list, tuple)):
            for w in v:
                if isinstance(w, Tensor):
                    return w._session
    return _context.default_session()


def scalar_dtype(v: Any) -> _dtype.dtype:
    """The dtype PyTorch infers for a Python scalar (e.g. ``full``'s fill value): bool, int64
    or the default float32."""
    if isinstance(v, (bool, np.bool_)):
        return _dtype.bool_
    if isinstance(v, (int, np.integer)):
        return _dtype.int64
    if isinstance(v, (float, np.floating)):
        return _dtype.float32
    raise TypeError(f"expected a Tensor or a number, got {type(v).__name__}")


def upload(session: Session, arr: np.ndarray, dt: _dtype.dtype, device: Any = None,
           requires_grad: bool = False, site: Optional[str] = None) -> "Tensor":
    """A new tensor holding ``arr`` converted to ``dt`` (Put, chunked)."""
    dev = _dtype.device_str(device) or session.default_device or ""
    wire = _dtype.to_wire_bytes(np.asarray(arr), dt)
    handle, seq = session.put(wire, dt.proto, arr.shape, dev, requires_grad,
                              site if site is not None else call_site())
    t = Tensor._make(session, handle, seq, dev or None)
    # Note [Uploads know their meta]: the client knows an upload's shape, dtype and, when the
    # caller named one of the daemon's devices, its device, so reading them (a batch's
    # `x.shape` in a training loop) need not wait for the Put's Ack. With no device named, the
    # client names the session's default itself (`Session.default_device`, tracked by
    # `set_options`): the Put
    # then lands where the meta says even if another thread changes the default meanwhile.
    # Only where that is unknown (a default set by an alias) does the Put say "" and the
    # meta come from the Ack. A Put the daemon refused (a quota) raises at the first read of
    # the value instead of at its shape. The Ack's meta is dropped on release.
    if dev in session.devices:
        t._info = _Meta(Size(arr.shape), dt, dev, bool(requires_grad), None)
    return t


def call(name: str, inputs: Sequence[Any], attrs: Optional[dict] = None, *,
         num_outputs: Optional[int] = None, session: Optional[Session] = None,
         why: str = "") -> Any:
    """Runs catalog op ``name``; returns a Tensor, or a tuple for multi-output ops.

    Inputs are Tensors of one session, or Python scalars (sent as 0-dim tensors).
    """
    s = session
    if s is None:
        x = inputs[0] if inputs else None
        s = x._session if isinstance(x, Tensor) else _session_of(inputs)
    op = s.catalog.get(name)
    if op is None:
        raise missing_op(name, s, why)
    return call_op(s, op, inputs, attrs, num_outputs)


def binary(name: str, a: Any, b: Any) -> Any:
    """A binary operator method (``a + b`` ...): ``call(name, [a, b])``, or NotImplemented
    when the other operand is neither a Tensor nor a number. Called by operator methods only:
    the call site is their caller."""
    # Two Tensors of one session take binary_method's inlined hot path; here
    # they are the cases it leaves (a missing op, two sessions) and scalars.
    if isinstance(a, Tensor):
        s = a._session
        if not isinstance(b, (Tensor, *_SCALARS)):
            return NotImplemented
    elif isinstance(b, Tensor) and isinstance(a, _SCALARS):
        s = b._session
    else:
        return NotImplemented
    op = s.catalog.get(name)
    if op is None:
        raise missing_op(name, s)
    return call_op(s, op, [a, b], None, site=site_field(3))


def binary_method(name: str) -> Callable[[Any, Any], Any]:
    """The operator method ``self <op> other`` of op ``name`` (``__add__`` ...): ``binary``,
    with its hot path inlined (one Python call per ``x + y`` instead of two)."""

    def method(self: "Tensor", other: Any) -> Any:
        if isinstance(other, Tensor):
            s = self._session
            op = s.catalog.get(name)
            if op is not None and op.plain_binary and other._session is s:
                dev = self._dev or other._dev
                first, seq, first_v = s.call(op.id, self._hv + other._hv, 1, site_field(2),
                                             op.op_field)
                t = _new(Tensor)  # Tensor._make, inlined
                t._session = s
                t._handle = first
                t._hv = first_v
                t._seq = seq
                t._info = None
                t._dev = dev
                t._rg = None
                return t
        return binary(name, self, other)

    method.__name__ = method.__qualname__ = f"{name}_operator"
    return _fast.operator_method(name, method)


def call_op(s: Session, op: OpInfo, inputs: Sequence[Any], attrs: Optional[dict],
            num_outputs: Optional[int] = None, site: Optional[bytes] = None) -> Any:
    """The one way ops run: checks the arguments, queues the Call, returns the outputs.
    Called by tensord code only. ``site``: the encoded call site (``_site.site_field``; by
    default the first frame outside the package above the caller)."""
    if site is None:
        site = site_field(2)
    n = len(inputs)
    if n < op.min_inputs or (op.max_inputs >= 0 and n > op.max_inputs):
        want = (f"{op.min_inputs}" if op.min_inputs == op.max_inputs else
                f"{op.min_inputs} to {op.max_inputs}" if op.max_inputs >= 0 else
                f"at least {op.min_inputs}")
        raise TypeError(f"{op.name}() takes {want} tensor inputs, got {n}")
    # The hot path (every input a Tensor) costs one pass: each Tensor keeps its handle's
    # varint, so the packed inputs are a concatenation.
    dev = None
    ins = b""
    others = False
    for x in inputs:
        if isinstance(x, Tensor):
            if x._session is not s:
                raise ValueError(f"{op.name}(): tensors belong to different tensord sessions")
            dev = dev or x._dev
            ins += x._hv
        else:
            others = True
    keep = None  # scalars' tensors stay alive until the Call is queued
    if others:
        ins, keep = _upload_scalars(s, op, inputs, dev, site)
    op_part = op_call_part(op, attrs) if attrs or op.any_required else op.op_field
    nout = op.num_outputs
    if nout < 0:
        if num_outputs is None:
            raise NotImplementedError(f"{op.name}: the number of outputs depends on its "
                                      "attributes; pass _num_outputs= (no wrapper knows it yet)")
        nout = num_outputs
    first, seq, first_v = s.call(op.id, ins, nout, site, op_part)
    del keep
    if nout == 1:  # Tensor._make, inlined
        t = _new(Tensor)
        t._session = s
        t._handle = first
        t._hv = first_v
        t._seq = seq
        t._info = None
        t._dev = dev
        t._rg = None
        return t
    return tuple(Tensor._make(s, first + i, seq, dev) for i in range(nout))


def op_call_part(op: OpInfo, attrs: Optional[dict]) -> bytes:
    """A Call's op and attribute fields for ``attrs`` (raises if a required one is missing)."""
    triples = encode_attrs(op, attrs or {})
    return op.op_field + attr_fields(triples) if triples else op.op_field


_PACK_F64 = struct.Struct("<d").pack
_PACK_I64 = struct.Struct("<q").pack


def _pack_scalar(x: Any) -> Optional[Tuple[_dtype.dtype, bytes]]:
    """(dtype, wire bytes) of a Python bool, int or float as a wrapped number (Note [Wrapped
    numbers] in runtime/tensor.h: a float travels exact, as float64, and still promotes like
    PyTorch's Python floats; NumPy's scalars count as numbers, as there), or None for anything
    else (ints beyond int64: the NumPy path raises)."""
    t = type(x)
    try:
        if t is float:
            return _dtype.float64, _PACK_F64(x)
        if t is int:
            return _dtype.int64, _PACK_I64(x)
        if t is bool:
            return _dtype.bool_, b"\x01" if x else b"\x00"
    except (OverflowError, struct.error):
        return None
    # Off the Python numbers' path: a NumPy scalar, as the number it holds (a longdouble
    # holds none: it stays on the NumPy path).
    v = x.item() if isinstance(x, np.generic) else None
    return None if v is None or isinstance(v, np.generic) else _pack_scalar(v)


def _upload_scalars(s: Session, op: OpInfo, inputs: Sequence[Any], dev: Optional[str],
                    site: bytes) -> Tuple[bytes, List["Tensor"]]:
    """The packed input handles of ``inputs``, Python scalars and NumPy arrays uploaded first
    (returned too: they must stay alive until the Call is queued)."""
    site_str = site_string(site)
    keep: List[Tensor] = []
    parts = []
    for x in inputs:
        if isinstance(x, Tensor):
            parts.append(x._hv)
            continue
        packed = _pack_scalar(x)
        if packed is not None:  # a Python number: no NumPy round trip
            dt, data = packed
            dev_s = _dtype.device_str(dev)
            handle, seq = s.put(data, dt.proto, (), dev_s, False, site_str, wrapped=True)
            t = Tensor._make(s, handle, seq, dev_s or None)
        elif isinstance(x, _SCALARS):
            dt = scalar_dtype(x)
            t = upload(s, np.asarray(x, dtype=dt.numpy_dtype), dt, dev, site=site_str)
        elif isinstance(x, np.ndarray):
            t = upload(s, x, _dtype.from_numpy_dtype(x.dtype), dev, site=site_str)
        else:
            raise TypeError(f"{op.name}(): expected Tensor inputs, got {type(x).__name__}")
        keep.append(t)
        parts.append(t._hv)
    return b"".join(parts), keep


def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n
