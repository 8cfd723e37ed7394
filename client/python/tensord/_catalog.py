"""The op catalog the daemon sends in Welcome, and how Python arguments map onto it.

Each ``OpSchema`` becomes an ``OpInfo``: inputs are tensors (or Python scalars, sent as 0-dim
tensors); everything else is an attribute, checked here against the schema so that a typo is a
``TypeError`` at the call, not a poisoned value later. Attributes left out (or passed as None)
take the schema default on the daemon.
"""

from __future__ import annotations

import operator
from typing import Any, Dict, List, NamedTuple, Sequence, Tuple

import numpy as np

from . import _dtype, _wire

# AttrSchema.type -> the AttrValue field that carries it
_FIELD = {"int": "i", "float": "f", "bool": "b", "string": "s", "ints": "ints",
          "floats": "floats", "dtype": "dtype"}


class AttrInfo(NamedTuple):
    name: str
    type: str
    required: bool
    default: Any


class OpInfo(NamedTuple):
    """One catalog row, in Python terms."""

    id: int
    name: str
    min_inputs: int
    max_inputs: int  # -1: variadic
    num_outputs: int  # -1: decided by attributes
    attrs: Tuple[AttrInfo, ...]
    by_name: Dict[str, AttrInfo]
    differentiable: bool
    doc: str
    op_field: bytes = b""  # the encoded Call.op_id field (_wire.op_fields)
    any_required: bool = False  # some attribute has no default
    plain_binary: bool = False  # takes two inputs, has one output, needs no attribute

    def signature(self) -> str:
        """A readable signature, e.g. ``sum(input, dim=[], keepdim=False)``."""
        if self.max_inputs < 0:
            ins = ["tensors"]
        else:
            ins = ["input", "other"][: self.max_inputs] if self.max_inputs <= 2 else \
                [f"input{i}" for i in range(self.max_inputs)]
            ins = [n if i < self.min_inputs else f"{n}=None" for i, n in enumerate(ins)]
        ats = [a.name if a.required else f"{a.name}={a.default!r}" for a in self.attrs]
        return f"{self.name}({', '.join(ins + ats)})"


def _default(av: Any) -> Any:
    kind = av.WhichOneof("value")
    if kind is None:
        return None
    v = getattr(av, kind)
    if kind in ("ints", "floats"):
        return list(v.values)
    if kind == "dtype":
        return _dtype.BY_PROTO.get(v)
    return v


def build(ops: Sequence[Any]) -> Dict[str, OpInfo]:
    """name -> OpInfo for a Welcome's ``ops``."""
    out = {}
    for op in ops:
        attrs = tuple(AttrInfo(a.name, a.type, a.required,
                               _default(a.default_value) if a.HasField("default_value") else None)
                      for a in op.attrs)
        out[op.name] = OpInfo(op.id, op.name, op.min_inputs, op.max_inputs, op.num_outputs, attrs,
                              {a.name: a for a in attrs}, op.differentiable, op.doc,
                              _wire.op_fields(op.id), any(a.required for a in attrs),
                              op.min_inputs <= 2 and (op.max_inputs < 0 or op.max_inputs >= 2)
                              and op.num_outputs == 1 and not any(a.required for a in attrs))
    return out


def _ints(v: Any) -> List[int]:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return [int(v)]
    return [operator.index(i) for i in v]


def _floats(v: Any) -> List[float]:
    if isinstance(v, (int, float, np.number)):
        return [float(v)]
    return [float(i) for i in v]


def _dtype_value(v: Any) -> int:
    if isinstance(v, _dtype.dtype):
        return v.proto
    if isinstance(v, str) and v in _dtype.BY_NAME:
        return _dtype.BY_NAME[v].proto
    raise TypeError(f"expected a tensord dtype, got {v!r}")


def _string(name: str, v: Any) -> str:
    if name == "device":
        return _dtype.device_str(v)
    return str(v)


_CONVERT = {
    "int": lambda n, v: operator.index(v),
    "float": lambda n, v: float(v),
    "bool": lambda n, v: bool(v),
    "string": _string,
    "ints": lambda n, v: _ints(v),
    "floats": lambda n, v: _floats(v),
    "dtype": lambda n, v: _dtype_value(v),
}


def encode_attrs(op: OpInfo, attrs: Dict[str, Any]) -> List[Tuple[str, str, Any]]:
    """(name, AttrValue field, value) triples for ``Session.call``; None values are left out."""
    out = []
    for name, value in attrs.items():
        if value is None:
            continue
        a = op.by_name.get(name)
        if a is None:
            raise TypeError(f"{op.name}() got an unexpected keyword argument '{name}'; the "
                            f"daemon's op is {op.signature()}")
        conv = _CONVERT.get(a.type)
        if conv is None:
            raise TypeError(f"{op.name}(): attribute '{name}' has type '{a.type}', which this "
                            "client does not know; upgrade the client")
        try:
            out.append((name, _FIELD[a.type], conv(name, value)))
        except (TypeError, ValueError) as e:
            raise TypeError(f"{op.name}(): argument '{name}' must be {a.type}, got "
                            f"{value!r} ({e})") from None
    for a in op.attrs:
        if a.required and attrs.get(a.name) is None:
            raise TypeError(f"{op.name}() missing required argument '{a.name}'; the daemon's op "
                            f"is {op.signature()}")
    return out


def bind_positional(op: OpInfo, extra: Sequence[Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Maps positional arguments after the inputs onto attributes, in schema order.

    As in PyTorch, an ``ints`` attribute also takes a run of plain ints
    (``zeros(2, 3)``, ``reshape(x, 2, -1)``) when it is the only positional attribute given.
    """
    attrs = dict(kwargs)
    extra = list(extra)
    i = 0
    for a in op.attrs:
        if i >= len(extra):
            break
        v = extra[i]
        if (a.type == "ints" and isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool)
                        for x in extra[i:])
                and i == 0 and len(extra) > 1):
            v, i = list(extra[i:]), len(extra)
        else:
            i += 1
        if a.name in attrs:
            raise TypeError(f"{op.name}() got multiple values for argument '{a.name}'")
        attrs[a.name] = v
    if i < len(extra):
        raise TypeError(f"{op.name}() takes at most {len(op.attrs)} attribute arguments after "
                        f"its inputs ({len(extra)} given); the daemon's op is {op.signature()}")
    return attrs
