"""Direct calls: a mapped op seen before with the same argument key queues its daemon Call
without running its rule again.

Note [Direct calls]: most ops a program sends are the same calls again and again (a training
step's). A rule turns ATen arguments into one daemon Call whose op, attributes and inputs
depend only on what ``_meta.key`` holds (the tensors' metadata and every other argument's
value), and on which tensors fill which arguments. So the first time a key's rule runs,
``record`` watches what it queues (``_aten_map.c`` reports its calls to ``taps``); if it was
exactly one Call of one output, each input the payload of a positional tensor argument,
and that output is what the rule returned, the key keeps (op id, encoded attributes, the
tensor arguments' positions). Later calls with the key (``run``) concatenate those tensors'
handles and queue the Call, skipping the rule, the catalog lookup and the attribute encoding
(``x.sum(1)`` through the device: ~19 -> ~9 us of client CPU; BENCHMARKS.md).

Not recorded, so always run by their rules: calls whose key holds a Python number by its type
only (pointwise ops, ``_meta.key``), since the rule may encode its value; seeded random ops;
rules that queue anything else (an upload, a second op) or take tensors from a list or a
keyword; two tensor arguments sharing one payload (which of them fills an input would be
undecided for later calls); and calls made while ``TENSORD_TORCH_CHECK`` compares results. The entries belong to
the session that recorded them (a new session's catalog may number ops differently).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch

from .. import _calls
from . import _aten_map
from .._site import site_field
from .._tensor import Tensor as NativeTensor
from ._tensor import TensordTensor

_NUMBERS = (bool, int, float)


class _Entry:
    __slots__ = ("session", "op_id", "op_part", "positions")

    def __init__(self, session: Any, op_id: int, op_part: bytes, positions: Tuple[int, ...]):
        self.session, self.op_id, self.op_part, self.positions = \
            session, op_id, op_part, positions


_seeded: Dict[int, bool] = {}


def run(entry: _Entry, args: tuple) -> NativeTensor:
    """Queues ``entry``'s Call on ``args``' tensors; returns its native output."""
    s = entry.session
    ins = b""
    dev = None
    for i in entry.positions:
        x = args[i]
        td = x._td
        if td is None:
            from ._dispatch import payload
            td = payload(x)
        ins += td._hv
        dev = dev or td._dev
    # The program's frame is above __torch_dispatch__, run_rule and dispatch (site_field skips
    # any other tensord and PyTorch frames on its way up).
    first, seq, first_v = s.call(entry.op_id, ins, 1, site_field(4), entry.op_part)
    return NativeTensor._make(s, first, seq, dev, first_v)


def _eligible(func: Any, args: tuple, kwargs: Dict[str, Any], pointwise: bool) -> bool:
    seeded = _seeded.get(id(func))  # the op stays alive in _meta's table (Note [OpTable])
    if seeded is None:
        seeded = _seeded[id(func)] = torch.Tag.nondeterministic_seeded in func.tags
    if seeded:
        return False
    for v in (*args, *kwargs.values()):
        if isinstance(v, torch.Tensor) and type(v) is not TensordTensor:
            return False  # a CPU scalar tensor: its value is not in the key
        if isinstance(v, (list, tuple)):
            if any(isinstance(e, torch.Tensor) or (pointwise and type(e) in _NUMBERS)
                   for e in v):
                return False
        elif pointwise and type(v) in _NUMBERS:
            return False
    return not any(isinstance(v, torch.Tensor) for v in kwargs.values())


def record(func: Any, session: Any, args: tuple, kwargs: Dict[str, Any], pointwise: bool,
           call_rule: Any) -> Tuple[Any, Optional[_Entry]]:
    """Runs ``call_rule()`` (a rule on unwrapped arguments); returns its result and, if the Call
    it queued can stand for it (Note [Direct calls]), that Call's entry."""
    if not _eligible(func, args, kwargs, pointwise):
        return call_rule(), None
    taps: List[tuple] = []
    _aten_map.taps.append(taps)
    seq0 = session._seq
    try:
        native = call_rule()
    finally:
        _aten_map.taps.pop()
    # One command in all (no upload, no second op, nothing queued outside ``c``) and it is the
    # rule's result.
    if len(taps) != 1 or session._seq != seq0 + 1:
        return native, None
    s, op, inputs, attrs, out = taps[0]
    if (s is not session or out is not native or type(native) is not NativeTensor
            or op.num_outputs != 1):
        return native, None
    # Each input is the payload of one positional tensor argument; two arguments sharing a
    # payload would leave which one fills an input undecided.
    by_payload = {id(a._td): i for i, a in enumerate(args) if type(a) is TensordTensor}
    if len(by_payload) != sum(type(a) is TensordTensor for a in args):
        return native, None
    positions = tuple(by_payload.get(id(x), -1) for x in inputs)
    if -1 in positions:
        return native, None
    return native, _Entry(session, op.id, _calls.op_call_part(op, attrs), positions)
