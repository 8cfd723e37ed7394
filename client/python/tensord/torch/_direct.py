"""Direct calls: a mapped op seen before with the same argument key queues its daemon Call
without running its rule again.

Note [Direct calls]: most ops a program sends are the same calls again and again (a training
step's). A rule turns ATen arguments into one daemon Call whose op, attributes and inputs
depend only on what ``_meta.key`` holds (the tensors' metadata and every other argument's
value), and on which arguments fill which inputs. So the first time a key's rule runs,
``record`` watches what it queues (``_aten_map.c`` reports its calls to ``taps``); if it was
exactly one Call of one output, each input the payload of a tensor argument (positional, a
keyword's, or an element of a list: ``cat``'s) or a Python number argument, and that output is
what the rule returned, the key keeps (op id, encoded attributes, where each input comes
from). Later calls with the key (``run``) concatenate those tensors' handles and queue the
Call, skipping the rule, the catalog lookup and the attribute encoding (``x.sum(1)`` through
the device: ~19 -> ~9 us of client CPU; BENCHMARKS.md). An in-place op's Call (``add_``) is
replayed the same way; ``_dispatch.run_rule`` returns its written ``self``, as the rule's path
does (PyTorch bumps the version counter above the dispatch, and its dispatcher hands programs
an in-place op's first argument whatever the kernel returns).

Python numbers: a pointwise op's key holds a number by its type only (``_meta.key``), so its
value must come from the call itself. The record finds each such number, by identity, among
the Call's inputs (``x * 2.0``: a wrapped-number upload, Note [Number handles]) or attributes
(``add``'s ``alpha``, ``clamp``'s ``min``), exactly once; a number the rule changed
(``float(2)``), dropped (``alpha=1``) or used twice is not found there, and the key is not
recorded. Replays take the call's values: its numbers' handles, its attributes' encoding
(``_direct_numbers``). Another op's numbers are values in its key, so its attributes are
constants of the key. So a rule passes a pointwise op's number unchanged or as a new object:
a function that returns its argument for some values only (``max(v, 0.0)``, ``abs`` of an
int) would look like passing it unchanged, and later calls would skip it.

CPU scalar tensors (``x * torch.tensor(2.0)``: 0-dim CPU tensors, which rules take as their
``item()``, Note [Number handles]) are numbers whose value no key holds, whatever the op: the
record requires each to fill exactly one input, or one number attribute of a pointwise op, and
replays take ``item()`` of the call's tensor there.

Not recorded, so always run by their rules: seeded random ops; calls with another CPU tensor
(uploaded), or a CPU tensor in a list; rules that queue anything else (an upload but a number's, a
second op); two tensor arguments sharing one payload, or two number arguments one object
(which of them fills an input would be undecided for later calls); a number input of a view
op (its output could alias the shared number); and calls made while ``TENSORD_TORCH_CHECK``
compares results. The entries belong to the session that recorded them (a new session's
catalog may number ops differently).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch

from .. import _calls
from . import _aten_map
from ._direct_numbers import AttrParts, numbers_of
from .._site import site_field
from .._tensor import Tensor as NativeTensor
from ._tensor import TensordTensor

_NUMBERS = (bool, int, float)
Source = Tuple[Any, Optional[int]]  # (argument index or keyword name, list element or None)


class _Entry:
    __slots__ = ("session", "op_id", "op_part", "positions", "list_at", "sources", "numbers",
                 "attr_sources", "attr_parts")

    def __init__(self, session: Any, op_id: int, op_part: bytes, sources: Tuple[Source, ...],
                 tensors: bool, attr_sources: Tuple[Source, ...],
                 attr_parts: Optional[AttrParts]):
        self.session, self.op_id, self.op_part = session, op_id, op_part
        # The common case: every input a positional tensor argument, no number attribute.
        self.positions = (tuple(i for i, _ in sources)
                          if tensors and not attr_sources and
                          all(type(i) is int and j is None for i, j in sources) else None)
        # The next: the inputs are one list argument's tensors, in order (cat's, stack's).
        first = sources[0][0] if sources else None
        self.list_at = (first if tensors and not attr_sources and type(first) is int and
                        sources == tuple((first, j) for j in range(len(sources))) else None)
        self.sources, self.attr_sources, self.attr_parts = sources, attr_sources, attr_parts
        # the session's number handles, for a Call with number inputs
        self.numbers = None if tensors else numbers_of(session)


_seeded: Dict[int, bool] = {}


def _payload(x: TensordTensor) -> NativeTensor:
    from ._dispatch import payload
    return payload(x)


def run(entry: _Entry, args: tuple, kwargs: Dict[str, Any]) -> Optional[NativeTensor]:
    """Queues ``entry``'s Call on the arguments; returns its native output, or None where the
    rule must run instead (a number the wire cannot hold)."""
    s = entry.session
    ins = b""
    dev = None
    keep = None  # number handles stay alive until the Call is queued
    positions = entry.positions
    if positions is not None:
        for i in positions:
            td = args[i]._td
            if td is None:
                td = _payload(args[i])
            ins += td._hv
            dev = dev or td._dev
        op_part = entry.op_part
    elif entry.list_at is not None:
        for x in args[entry.list_at]:  # its length is in the key
            td = x._td
            if td is None:
                td = _payload(x)
            ins += td._hv
            dev = dev or td._dev
        op_part = entry.op_part
    else:
        values: List[Any] = []
        for where, j in entry.sources:
            x = args[where] if where.__class__ is int else kwargs[where]
            if j is not None:
                x = x[j]
            values.append(x if x.__class__ is TensordTensor else _value(x))
        got = inputs_of(values, entry.numbers)
        if got is None:
            return None
        ins, dev, keep = got
        op_part = entry.op_part
        if entry.attr_parts is not None:
            op_part = entry.attr_parts.part(tuple([
                _value(args[w] if w.__class__ is int else kwargs[w])
                for w, _ in entry.attr_sources]))
    # The program's frame is above __torch_dispatch__, run_rule and dispatch (site_field skips
    # any other tensord and PyTorch frames on its way up).
    first, seq, first_v = s.call(entry.op_id, ins, 1, site_field(4), op_part)
    del keep
    return NativeTensor._make(s, first, seq, dev, first_v)


def inputs_of(values: List[Any], numbers: Any) -> Optional[Tuple[bytes, Any, List[Any]]]:
    """A Call's inputs from ``values`` (tensord tensors, and numbers that ``numbers`` makes
    wrapped-number handles of on the tensors' device): (the handles' bytes, that device, the
    number tensors to keep alive until the Call is queued), or None for a number the wire cannot
    hold."""
    parts: List[Any] = []
    dev = None
    for x in values:
        if x.__class__ is TensordTensor:
            td = x._td
            if td is None:
                td = _payload(x)
            parts.append(td._hv)
            dev = dev or td._dev
        else:
            parts.append(x)  # a number: its handle once the device is known
    keep: List[Any] = []
    if numbers is not None:
        for k, x in enumerate(parts):
            if x.__class__ is not bytes:
                t = numbers.tensor(x, dev)
                if t is None:
                    return None
                keep.append(t)
                parts[k] = t._hv
    return b"".join(parts), dev, keep


def _cpu_scalar(v: Any) -> bool:
    """A 0-dim CPU tensor, which acts as its value (``_dispatch.unwrap``: ``item()``)."""
    return isinstance(v, torch.Tensor) and type(v) is not TensordTensor and v.dim() == 0 \
        and v.device.type == "cpu"


def _value(x: Any) -> Any:
    """A number source's value in this call: the number, or a CPU scalar tensor's item."""
    return x.item() if isinstance(x, torch.Tensor) else x


def _eligible(func: Any, args: tuple, kwargs: Dict[str, Any], pointwise: bool) -> bool:
    seeded = _seeded.get(id(func))  # the op stays alive in _meta's table (Note [OpTable])
    if seeded is None:
        seeded = _seeded[id(func)] = torch.Tag.nondeterministic_seeded in func.tags
    if seeded:
        return False
    for v in (*args, *kwargs.values()):
        if isinstance(v, torch.Tensor) and type(v) is not TensordTensor and not _cpu_scalar(v):
            return False  # another device's tensor: uploaded by the rule
        if isinstance(v, (list, tuple)):
            if any((isinstance(e, torch.Tensor) and type(e) is not TensordTensor)
                   or (pointwise and type(e) in _NUMBERS) for e in v):
                return False
    return True


_AMBIGUOUS: Source = (None, None)


def _sources(args: tuple, kwargs: Dict[str, Any], uargs: list, ukwargs: Dict[str, Any]
             ) -> Tuple[Dict[int, Source], Dict[int, Any], set]:
    """id(unwrapped value) -> its source, for the tensors' payloads and the numbers (an id of
    two sources: ``_AMBIGUOUS``); the numbers by id; and the ids of the CPU scalar tensors'
    values (numbers too, whose values no key holds)."""
    found: Dict[int, Source] = {}
    numbers: Dict[int, Any] = {}
    scalars: set = set()

    def add(u: Any, where: Any, j: Optional[int]) -> None:
        k = id(u)
        found[k] = _AMBIGUOUS if k in found else (where, j)

    def scan(a: Any, u: Any, where: Any) -> None:
        t = type(a)
        if t is TensordTensor:
            add(u, where, None)
        elif t in _NUMBERS or (t is not TensordTensor and _cpu_scalar(a)):
            add(u, where, None)
            numbers[id(u)] = u
            if t not in _NUMBERS:
                scalars.add(id(u))
        elif t is list or t is tuple:
            for j, (e, ue) in enumerate(zip(a, u)):
                if type(e) is TensordTensor:
                    add(ue, where, j)

    for i, a in enumerate(args):
        scan(a, uargs[i], i)
    for name, v in kwargs.items():
        scan(v, ukwargs[name], name)
    return found, numbers, scalars


def record(func: Any, session: Any, args: tuple, kwargs: Dict[str, Any], uargs: list,
           ukwargs: Dict[str, Any], pointwise: bool, view: bool, rule: Any
           ) -> Tuple[Any, Optional[_Entry]]:
    """Runs ``rule`` on the unwrapped arguments; returns its result and, if the Call it queued
    can stand for it (Note [Direct calls]), that Call's entry. ``view``: the op's output is a
    view of an argument."""
    if not _eligible(func, args, kwargs, pointwise):
        return rule(*uargs, **ukwargs), None
    taps: List[tuple] = []
    _aten_map.taps.append(taps)
    seq0 = session._seq
    try:
        native = rule(*uargs, **ukwargs)
    finally:
        _aten_map.taps.pop()
    if len(taps) != 1:
        return native, None
    s, op, inputs, attrs, out = taps[0]
    if (s is not session or out is not native or type(native) is not NativeTensor
            or op.num_outputs != 1):
        return native, None
    found, numbers, scalars = _sources(args, kwargs, uargs, ukwargs)
    sources = tuple(found.get(id(x), _AMBIGUOUS) for x in inputs)
    if _AMBIGUOUS in sources:
        return native, None
    n_numbers = sum(1 for x in inputs if id(x) in numbers)
    if scalars:
        # A CPU scalar tensor's value is in no key: it must fill one input, or one number
        # attribute of a pointwise op (taken from each call below), and nothing else.
        used = [id(x) for x in inputs] + [id(v) for v in (attrs or {}).values()]
        if any(used.count(k) != 1 for k in scalars) or (
                not pointwise and any(id(v) in scalars for v in (attrs or {}).values())):
            return native, None
    # One command in all (no upload but the numbers', no second op, nothing queued outside
    # ``c``) and it is the rule's result.
    if session._seq != seq0 + 1 + n_numbers or (n_numbers and view):
        return native, None
    attr_sources: Tuple[Source, ...] = ()
    attr_parts = None
    if pointwise and numbers:
        names = tuple(k for k, v in (attrs or {}).items() if id(v) in numbers)
        uses = [id(x) for x in inputs] + [id(attrs[k]) for k in names]
        if any(uses.count(k) != 1 for k in numbers):
            return native, None  # changed, dropped or used twice by the rule
        attr_sources = tuple(found[id(attrs[k])] for k in names)
        if _AMBIGUOUS in attr_sources:
            return native, None
        if names:
            attr_parts = AttrParts(op, attrs, names)
    tensors = n_numbers == 0
    return native, _Entry(session, op.id, _calls.op_call_part(op, attrs), sources, tensors,
                          attr_sources, attr_parts)
