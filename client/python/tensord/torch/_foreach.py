"""``_foreach_<op>[_]`` ops (the optimizers' ``foreach`` implementations): the per-tensor op on
each tensor of the lists, and a recorded plan of those per-tensor Calls replayed in one loop.

Note [Foreach replay]: a foreach call is its per-tensor op (``mul_`` for ``_foreach_mul_``) on
each position of its lists, dispatched as ``dispatch`` would dispatch that op (Note [Direct
calls] applies to each: the third call of a per-tensor key takes its recorded Call). That still
pays the per-tensor op's key, lookups and argument tuples for every tensor, ~7 us each. So once
every position's per-tensor call has a recorded Call (``_dispatch._plain``), the foreach call's
own key (its op, every tensor's metadata, its numbers as the per-tensor op's key holds them:
by type for a pointwise op) keeps a ``_Plan``: for each position, that Call with each input
mapped back to the foreach argument it comes from (an element of a list, or the argument
itself). A later call with the key queues the positions' Calls in one loop. The foreach key
fixes every per-tensor key, so the plan is exactly what the per-tensor replays would queue;
numbers and number attributes are taken from the call, as ``_direct.run`` takes them. A
position whose number the wire cannot hold ends the plan's loop, and the per-tensor path
finishes the call from there (its Calls before are queued already). The loop is written out
for plans whose first one or two inputs come from lists and the rest are the same at every
position (``_replay``: ~0.6 us a tensor); others go position by position (``_replay_each``).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from . import _connection, _meta
from .._fast import session_call as fast_call
from .._site import site_field
from .._tensor import Tensor as NativeTensor
from ._direct import inputs_of
from ._tensor import TensordTensor, make

aten = torch.ops.aten
_MAX_PLANS = 1 << 12
_MAX_TRIES = 4  # calls that may try to build a key's plan (the first cannot: Note above)
Slot = Tuple[Any, bool]  # (foreach argument index or keyword name, an element of a list)


class _Op:
    """What a foreach overload runs: its per-tensor op, in place or not, pointwise or not."""

    __slots__ = ("per", "inplace", "pointwise", "kwarg_only", "functional")

    def __init__(self, func: Any, args: tuple) -> None:
        name = func._schema.name.split("::")[-1][len("_foreach_"):]
        self.inplace = name.endswith("_")
        # An in-place foreach op whose per-tensor op ATen lacks (``_foreach_maximum_``: no
        # ``maximum_``) runs as its functional foreach op and ``_foreach_copy_``.
        self.functional = None
        if self.inplace and not hasattr(aten, name):
            self.functional = getattr(getattr(aten, "_foreach_" + name[:-1]),
                                      func._overloadname)
            name = name[:-1]
        self.per = _per_tensor_op(name, func, args)
        self.pointwise = _meta.is_pointwise(self.per)
        # The foreach op's positional arguments fill the per-tensor op's parameters in order,
        # keyword-only ones by name (addcdiv_'s ``value`` is the foreach op's ``scalars``).
        self.kwarg_only = tuple(p.name if p.kwarg_only else None
                                for p in self.per._schema.arguments)


class _Plan:
    """A foreach key's per-tensor Calls: one op, attributes and input slots for all positions
    (a ``_direct._Entry``'s, its sources as foreach slots), each position's output metadata."""

    __slots__ = ("session", "op_id", "op_part", "slots", "numbers", "attr_slots", "attr_parts",
                 "metas", "lead", "listed_attrs")

    def __init__(self, session: Any, entry: Any, slots: Tuple[Slot, ...],
                 attr_slots: Tuple[Slot, ...], metas: Optional[List[tuple]]) -> None:
        self.session, self.op_id, self.op_part = session, entry.op_id, entry.op_part
        self.numbers, self.attr_parts = entry.numbers, entry.attr_parts
        self.slots, self.attr_slots = slots, attr_slots
        self.metas = metas  # (shape, stride, dtype) of each fresh output; None in place
        # ``_replay``'s common cases: the first one or two inputs from lists, no other from one
        lead = 0
        while lead < len(slots) and slots[lead][1]:
            lead += 1
        self.lead = lead if lead <= 2 and not any(sl[1] for sl in slots[lead:]) else 0
        self.listed_attrs = any(sl[1] for sl in attr_slots)

    def same(self, entry: Any, slots: Tuple[Slot, ...], attr_slots: Tuple[Slot, ...]) -> bool:
        """Whether another position's Call is this plan's (its values aside)."""
        if entry.op_id != self.op_id or slots != self.slots or attr_slots != self.attr_slots \
                or (entry.numbers is None) != (self.numbers is None):
            return False
        mine, theirs = self.attr_parts, entry.attr_parts
        if mine is None or theirs is None:  # the op part holds every attribute
            return mine is theirs and entry.op_part == self.op_part
        # The number attributes are the call's; the others must agree.
        return mine.names == theirs.names and _fixed_attrs(mine) == _fixed_attrs(theirs)


def _fixed_attrs(parts: Any) -> dict:
    return {k: v for k, v in parts.attrs.items() if k not in parts.names}


_ops: Dict[int, _Op] = {}  # id(foreach op) -> _Op (the op stays alive in _meta's table)
_plans: Dict[Any, Any] = {}  # foreach key -> _Plan, or the number of calls that tried


# The device's dispatcher module (``dispatch`` and its ``CHECK``, read at each call: tests
# switch the check off), set by ``_dispatch`` when it loads, for the foreach composites
# (``_foreach_composites``), which the rule table imports before it and so cannot import
# ``_dispatch`` themselves.
_dispatcher: Any = None


def bind(dispatcher_module: Any) -> None:
    global _dispatcher
    _dispatcher = dispatcher_module


def run_bound(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """``run`` through the dispatcher ``bind`` set."""
    d = _dispatcher
    return run(func, args, kwargs, d.dispatch, d.CHECK)


def run(func: Any, args: tuple, kwargs: Dict[str, Any], dispatch: Callable[..., Any],
        check: bool) -> Any:
    """``func`` on the device (the module's docstring); ``check``: TENSORD_TORCH_CHECK."""
    op = _ops.get(id(func))
    if op is None:
        op = _Op(func, args)
        if args[0]:  # (an empty list cannot tell _per_tensor_op which overload it is)
            _meta.is_pointwise(func)  # keeps func alive under its id
            _ops[id(func)] = op
    if op.functional is not None:
        outs = run(op.functional, args, kwargs, dispatch, check)
        run(aten._foreach_copy_.default, (args[0], outs), {}, dispatch, check)
        return None
    key = None if check else _key(func, args, kwargs, op.pointwise)
    plan = _plans.get(key) if key is not None else None
    outs: List[Any] = []
    start = 0
    if plan.__class__ is _Plan and plan.session is _connection.current():
        start = _replay(plan, args, kwargs, outs)
    n = len(args[0])
    calls = [_position(op, args, kwargs, i) for i in range(start, n)]
    for a, k in calls:
        # Already below autograd (as the per-tensor call would run from here): a tensord
        # tensor's op goes to ``dispatch`` directly, without PyTorch's dispatcher again.
        outs.append(dispatch(op.per, a, k) if type(a[0]) is TensordTensor else op.per(*a, **k))
    if start == 0 and key is not None:
        _try_plan(key, plan if plan.__class__ is int else 0, op, args, kwargs, calls)
    if op.inplace:
        # PyTorch's per-tensor kernels bump each written tensor's version; below autograd
        # here, the per-tensor ops do not (nor does the foreach op's own dispatch).
        torch._C._increment_version(args[0])
        return None
    return outs


def _key(func: Any, args: tuple, kwargs: Dict[str, Any], pointwise: bool) -> Optional[tuple]:
    key_of = _meta._key_of
    try:
        return (id(func), *[key_of(a, pointwise) for a in args],
                tuple([(k, key_of(v, pointwise)) for k, v in kwargs.items()]) if kwargs else ())
    except TypeError:
        return None


def _position(op: _Op, args: tuple, kwargs: Dict[str, Any], i: int) -> Tuple[tuple, dict]:
    """The per-tensor op's (args, kwargs) at position ``i`` of the lists."""
    a: List[Any] = []
    k = {name: (v[i] if isinstance(v, (list, tuple)) else v) for name, v in kwargs.items()}
    kw = op.kwarg_only
    for j, v in enumerate(args):
        v = v[i] if isinstance(v, (list, tuple)) else v
        name = kw[j] if j < len(kw) else None
        if name is not None:
            k[name] = v
        else:
            a.append(v)
    return tuple(a), k


def _slot_of(op: _Op, args: tuple, kwargs: Dict[str, Any], where: Any) -> Optional[Slot]:
    """The foreach argument a per-tensor argument (a position, or a keyword's name) comes
    from (``_position``'s mapping, backwards)."""
    kw = op.kwarg_only
    p = 0
    for j, v in enumerate(args):
        name = kw[j] if j < len(kw) else None
        if (name is not None and name == where) or (name is None and p == where):
            return j, isinstance(v, (list, tuple))
        p += name is None
    if where in kwargs:
        return where, isinstance(kwargs[where], (list, tuple))
    return None


def _try_plan(key: Any, tries: int, op: _Op, args: tuple, kwargs: Dict[str, Any],
              calls: List[Tuple[tuple, dict]]) -> None:
    """Keeps ``key``'s plan if every position's per-tensor call has a recorded Call, all of
    one op and attributes, each input from the same foreach argument."""
    from . import _dispatch
    if tries >= _MAX_TRIES or len(_plans) >= _MAX_PLANS or not calls:
        return
    _plans[key] = tries + 1
    session = _connection.current()
    want = _dispatch._WRITTEN if op.inplace else _dispatch._FRESH
    plan = None
    metas: Optional[List[tuple]] = None if op.inplace else []
    for a, k in calls:
        if type(a[0]) is not TensordTensor:
            return
        plain = _dispatch._plain.get(_meta.key(op.per, a, k))
        if plain is None or plain[4] != want or plain[5] is None or \
                plain[5].session is not session:
            return
        entry = plain[5]
        slots = tuple(_slot_of(op, args, kwargs, w) if j is None else None
                      for w, j in entry.sources)
        attr_slots = tuple(_slot_of(op, args, kwargs, w) if j is None else None
                           for w, j in entry.attr_sources)
        if None in slots or None in attr_slots:
            return
        if plan is None:
            plan = _Plan(session, entry, slots, attr_slots, metas)
        elif not plan.same(entry, slots, attr_slots):
            return
        if metas is not None:
            metas.append((plain[0], plain[1], plain[3]))
    _plans[key] = plan


def _column(args: tuple, kwargs: Dict[str, Any], slot: Slot) -> Any:
    where = slot[0]
    return args[where] if where.__class__ is int else kwargs[where]


def _replay(plan: _Plan, args: tuple, kwargs: Dict[str, Any], outs: List[Any]) -> int:
    """Queues the plan's Calls (appending fresh outputs to ``outs``); returns the positions
    done: all, or the first whose number the wire cannot hold."""
    s = plan.session
    # The program's frame is above __torch_dispatch__, dispatch, run and this (site_field
    # skips any other tensord and PyTorch frames on its way up: torch.optim's).
    site = site_field(4)
    slots = plan.slots
    op_part = plan.op_part
    if plan.attr_parts is not None:
        if plan.listed_attrs:
            return _replay_each(plan, site, args, kwargs, 0, outs)
        op_part = plan.attr_parts.part(tuple([_column(args, kwargs, sl)
                                              for sl in plan.attr_slots]))
    lead = plan.lead
    if not lead:
        return _replay_each(plan, site, args, kwargs, 0, outs)
    # The common cases: the first one or two inputs from lists (``_foreach_mul_(params, 0.9)``,
    # ``_foreach_add_(params, grads, alpha=-lr)``, ``_foreach_div_(xs, [numbers])``), the
    # others the same tensors or numbers at every position.
    xs = _column(args, kwargs, slots[0])
    td = xs[0]._td
    if td is None:
        return _replay_each(plan, site, args, kwargs, 0, outs)
    dev = td._dev
    ys = _column(args, kwargs, slots[1]) if lead == 2 else xs
    numbers_y = lead == 2 and ys[0].__class__ is not TensordTensor
    numbers = plan.numbers
    rest = b""
    keep = []  # number handles stay alive until their Calls are queued
    for slot in slots[lead:]:
        v = _column(args, kwargs, slot)
        if v.__class__ is TensordTensor:
            td = v._td
            if td is None or td._dev != dev:
                return _replay_each(plan, site, args, kwargs, 0, outs)
            rest += td._hv
        else:
            t = numbers.tensor(v, dev)
            if t is None:
                return _replay_each(plan, site, args, kwargs, 0, outs)
            keep.append(t)
            rest += t._hv
    op_id, metas = plan.op_id, plan.metas
    written: List[int] = []
    i = 0
    for x, y in zip(xs, ys):
        td = x._td
        if td is None or td._dev != dev:
            break  # a payload to make, or another device: position by position from here
        if lead == 1:
            ins = td._hv + rest
        elif numbers_y:
            t = numbers.tensor(y, dev)
            if t is None:
                break  # (the wire cannot hold it: _replay_each says where)
            keep.append(t)
            ins = td._hv + t._hv + rest
        else:
            ty = y._td
            if ty is None or ty._dev != dev:
                break
            ins = td._hv + ty._hv + rest
        r = fast_call(s, ins, site, op_part) if fast_call is not None else None
        first, seq, first_v = r if r is not None else s._call_python(op_id, ins, 1, site,
                                                                     op_part)
        if metas is None:
            written.append(first)  # an in-place op's output: self's value, released
        else:
            shape, stride, dtype = metas[i]
            outs.append(make(NativeTensor._make(s, first, seq, dev, first_v), shape, stride,
                             0, dtype))
        i += 1
    del keep
    _release(s, written)
    return i if i == len(xs) else _replay_each(plan, site, args, kwargs, i, outs)


def _replay_each(plan: _Plan, site: bytes, args: tuple, kwargs: Dict[str, Any], start: int,
                 outs: List[Any]) -> int:
    """``_replay`` from position ``start`` on, each position as ``_direct.run`` queues its
    Call; returns the positions done."""
    s = plan.session
    cols = [(_column(args, kwargs, sl), sl[1]) for sl in plan.slots]
    attr_cols = [(_column(args, kwargs, sl), sl[1]) for sl in plan.attr_slots]
    written: List[int] = []
    n = len(args[0])
    for i in range(start, n):
        got = inputs_of([v[i] if listed else v for v, listed in cols], plan.numbers)
        if got is None:
            _release(s, written)
            return i
        ins, dev, keep = got
        op_part = plan.op_part
        if plan.attr_parts is not None:
            op_part = plan.attr_parts.part(tuple([v[i] if listed else v
                                                  for v, listed in attr_cols]))
        first, seq, first_v = s.call(plan.op_id, ins, 1, site, op_part)
        del keep
        if plan.metas is None:
            written.append(first)  # an in-place op's output: self's value, released
        else:
            shape, stride, dtype = plan.metas[i]
            outs.append(make(NativeTensor._make(s, first, seq, dev, first_v), shape, stride, 0,
                             dtype))
    _release(s, written)
    return n


def _release(s: Any, handles: List[int]) -> None:
    """Releases the outputs of in-place Calls (what dropping their ``NativeTensor``s does:
    ``tensord.Tensor._release``), in one batched Release where a batch is open."""
    if s._entries:
        s._released.extend(handles)
    else:
        for h in handles:
            s.release(h)


def _per_tensor_op(name: str, func: Any, args: tuple) -> Any:
    packet = getattr(aten, name)
    over = func._overloadname
    tensor_list = (len(args) > 1 and isinstance(args[1], (list, tuple)) and len(args[1]) > 0
                   and isinstance(args[1][0], torch.Tensor))
    if over in ("Scalar", "ScalarList"):
        cand = ["Scalar", "default", "Tensor"]
    elif over in ("List", "Tensor"):
        cand = ["Tensor", "default"]
    elif tensor_list:  # _foreach_copy_'s: copy_.default (copy_.Tensor is TorchScript's)
        cand = ["default", "Tensor"] if over == "default" else ["Tensor", "default"]
    else:
        cand = [over, "default", "Scalar", "Tensor"]
    overloads = packet.overloads()
    for c in cand:
        if c in overloads:
            return getattr(packet, c)
    raise NotImplementedError(f"{func}: no per-tensor op aten.{name} to loop over")
