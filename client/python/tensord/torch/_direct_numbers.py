"""The Python numbers of a replayed Call (Note [Direct calls], ``_direct``): as inputs, the
session's wrapped-number handles by value; as attributes, the Call's op part encoded anew.

Note [Number handles]: a rule passes a Python number input to the daemon as a 0-dim "wrapped
number" tensor uploaded just before its Call (``_calls._upload_scalars``: a Put, and a Release
after). A replayed Call takes the handle of an upload of the same value instead, kept by the
session's ``Numbers`` (at most ``MAX_NUMBERS`` of them; past that all are released and the next
ones uploaded again): ``x * 2.0`` in a loop is one Call, not three commands. The value is the
call's own: the handle is looked up by the number's type, its exact bits (``-0.0`` and ``0.0``
are two values, and so are NaNs of two payloads) and the device of the Call's tensors, the
place the rule's upload would go. A wrapped number is never written: no op's input is its
output, and only this table holds the handle.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, Optional, Tuple

from .. import _dtype
from .._calls import _pack_scalar, op_call_part
from .._tensor import Tensor as NativeTensor

MAX_NUMBERS = 256
MAX_PARTS = 64  # encoded op parts kept per recorded Call (its attributes' recent values)
_PACK_F64 = struct.Struct("<d").pack


def value_key(v: Any) -> Any:
    """A number's dict key holding its type and exact bits (``0.0 == -0.0`` as Python sees
    them, and ``1 == 1.0 == True``)."""
    t = type(v)
    return (t, _PACK_F64(v)) if t is float else (t, v)


class Numbers:
    """One session's wrapped-number handles (Note [Number handles])."""

    __slots__ = ("session", "handles")

    def __init__(self, session: Any) -> None:
        self.session = session
        self.handles: Dict[Tuple[Any, Any, Optional[str]], NativeTensor] = {}

    def tensor(self, v: Any, dev: Optional[str]) -> Optional[NativeTensor]:
        """A wrapped-number tensor holding ``v`` on ``dev`` (a tensor's ``_dev``); the caller
        holds it until its Call is queued (another thread may clear the table meanwhile). None
        for a number the wire cannot hold (an int beyond int64: the rule's path raises)."""
        t = type(v)
        key = (t, _PACK_F64(v) if t is float else v, dev)
        h = self.handles.get(key)
        if h is None:
            packed = _pack_scalar(v)
            if packed is None:
                return None
            dt, data = packed
            s = self.session
            dev_s = _dtype.device_str(dev)
            if len(self.handles) >= MAX_NUMBERS:
                self.handles.clear()  # their finalizers queue the Releases
            handle, seq = s.put(data, dt.proto, (), dev_s, False, "", wrapped=True)
            h = self.handles[key] = NativeTensor._make(s, handle, seq, dev_s or None)
        return h


_numbers: Dict[int, Numbers] = {}  # id(session) -> its table (the current session's only)


def numbers_of(session: Any) -> Numbers:
    n = _numbers.get(id(session))
    if n is None or n.session is not session:
        _numbers.clear()  # a new session: the old one's handles died with it
        n = _numbers[id(session)] = Numbers(session)
    return n


class AttrParts:
    """A recorded Call's op part for its number attributes' values (``alpha``, ``min`` ...):
    encoded once per value, as ``_calls.op_call_part`` encodes the rule's attributes."""

    __slots__ = ("op", "attrs", "names", "parts")

    def __init__(self, op: Any, attrs: Optional[dict], names: Tuple[str, ...]) -> None:
        self.op, self.attrs, self.names = op, dict(attrs or {}), names
        self.parts: Dict[Any, bytes] = {}

    def part(self, values: Tuple[Any, ...]) -> bytes:
        key = tuple([value_key(v) for v in values])
        p = self.parts.get(key)
        if p is None:
            attrs = dict(self.attrs)
            attrs.update(zip(self.names, values))
            p = op_call_part(self.op, attrs)
            if len(self.parts) >= MAX_PARTS:
                self.parts.clear()
            self.parts[key] = p
        return p
