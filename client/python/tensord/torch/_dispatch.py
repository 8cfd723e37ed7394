"""Where every ATen op on a tensord tensor goes (``TensordTensor.__torch_dispatch__``).

In order: the device's own handlers (copies, reads, factories' fills; ``_special``), a rule
mapping the op onto the daemon's catalog (``_aten_table.RULES``), a ``_foreach_`` op as its
per-tensor op in a loop (``_foreach``, its recorded Calls replayed: Note [Foreach replay]), an ``out=`` or in-place op as its functional twin plus ``copy_``
(``_twins``), PyTorch's decomposition into ops that map (``torch._decomp``), and last the
counted CPU fallback (``_fallback``). Rules queue commands and
return at once: output metadata comes from PyTorch's meta functions (``_meta``), never from the
daemon.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Dict, Optional, Tuple

import torch
from torch._decomp import decomposition_table

from . import (_aten_table, _connection, _direct, _fallback, _foreach, _meta, _special, _twins,
               _transfer)
from .. import _errors
from .._tensor import Tensor as NativeTensor
from .._tensor import call as native_call
from ._tensor import TensordTensor, contiguous_strides, make

aten = torch.ops.aten
_state = threading.local()
# TENSORD_TORCH_CHECK=1: every mapped op waits for the daemon and compares its result's shape
# and dtype with PyTorch's meta function (the tests' way to catch a wrong mapping).
CHECK = os.environ.get("TENSORD_TORCH_CHECK") == "1"


def payload(t: TensordTensor) -> NativeTensor:
    """``t``'s daemon tensor, made (``empty``) if nothing wrote it yet (Note [Lazy payload])."""
    td = t._td
    if td is None:
        if t._error is not None:
            raise t._error
        td = t._td = native_call("empty", [], {"shape": list(t.shape),
                                               "dtype": _transfer.native_dtype(t.dtype)},
                                 session=_connection.session())
    return td


def assign(t: TensordTensor, value: NativeTensor) -> None:
    """Makes ``value`` (``t``'s shape and dtype) the value of ``t``: binds it when nothing else
    can see ``t``'s payload (Note [Lazy payload]), else copies into it on the daemon."""
    if t._td is None and t._base is None:
        t._td = value
    else:
        native_call("copy_", [payload(t), value])


def unwrap(x: Any) -> Any:
    if isinstance(x, TensordTensor):
        return payload(x)
    if isinstance(x, torch.Tensor):
        if x.device.type == "cpu" and x.dim() == 0:
            return x.item()  # a CPU scalar tensor acts as a number, as in PyTorch
        if x.device.type == "meta":
            raise RuntimeError("a meta tensor cannot be an input of a tensord op")
        return _transfer.upload(_connection.session(), x.cpu())
    if isinstance(x, torch.dtype):
        return _transfer.native_dtype(x)
    return x


def _unwrap_arg(x: Any) -> Any:
    """``unwrap`` of one argument (ATen arguments nest at most one list deep)."""
    if type(x) is TensordTensor:
        td = x._td
        return td if td is not None else payload(x)
    if isinstance(x, (list, tuple)):
        return [unwrap(v) for v in x]
    return unwrap(x)


def dispatch(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    fid = id(func)  # Note [OpTable]: an OpOverload's hash is Python code
    handler = _special.HANDLERS.by_id.get(fid)
    if handler is not None:
        return handler(func, args, kwargs)
    rule = _aten_table.RULES.by_id.get(fid)
    if rule is not None:
        out = run_rule(func, rule, args, kwargs)
        if out is not NotImplemented:  # a rule declines arguments the daemon's op lacks
            return out
    name = func.__name__
    if name.startswith("_foreach_"):
        return _foreach.run_bound(func, args, kwargs)
    if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd"):
        return func.decompose(*args, **kwargs)
    twin = _twins.functional_twin(func)
    if twin is not None:
        out = _twins.run(func, twin, args, kwargs, dispatch)
        if out is not NotImplemented:
            return out
    inplace = _twins.inplace_twin(func)
    if inplace is not None:
        return _twins.run_inplace(func, inplace, args, kwargs, dispatch)
    decomp = decomposition_table.get(func)
    active = _decomposing()
    if decomp is not None and func not in active:
        active.add(func)
        try:
            args, kwargs = _cpu_scalars_moved(args, kwargs)
            out = decomp(*args, **kwargs)
        finally:
            active.discard(func)
        if out is not NotImplemented:
            return out
    return _fallback.run(func, args, kwargs)


def _cpu_scalars_moved(args: tuple, kwargs: Dict[str, Any]) -> Tuple[tuple, Dict[str, Any]]:
    """``args`` and ``kwargs`` with each CPU scalar tensor (0-d) on the device of their first
    tensord tensor: PyTorch's kernels take one beside a device's tensors (``index_fill``'s
    value), its decompositions into other ops do not."""
    flat = [*args, *kwargs.values()]
    if not any(type(x) is torch.Tensor and x.ndim == 0 and x.device.type == "cpu" for x in flat):
        return args, kwargs
    device = next((x.device for x in flat if type(x) is TensordTensor), None)
    if device is None:
        return args, kwargs

    def move(x: Any) -> Any:
        if type(x) is torch.Tensor and x.ndim == 0 and x.device.type == "cpu":
            return x.to(device)
        return x

    return tuple(move(x) for x in args), {k: move(v) for k, v in kwargs.items()}


def poisoned(func: Any, args: tuple, kwargs: Dict[str, Any], error: Exception) -> Any:
    """``func``'s outputs carrying ``error`` (Note [Poisoned backward values])."""
    returns = func._schema.returns
    try:
        meta_out = _meta.run(func, args, kwargs)
    except Exception:  # noqa: BLE001 (no meta function: _ctc_loss_backward's)
        # Nothing may raise from here (the engine's thread loses Python exceptions, and has
        # aborted the process on them): each output takes the shape of ``self`` (or the first
        # tensor argument), what a backward op's gradient of its input has.
        like = _like_input(func, args, kwargs)
        if like is None:
            raise
        meta = torch.empty(like.shape, dtype=like.dtype, device="meta")
        meta_out = meta if len(returns) == 1 else tuple(meta for _ in returns)

    def one(ret: Any, meta: Any) -> Any:
        if isinstance(meta, (list, tuple)):
            return type(meta)(one(ret, m) for m in meta)
        if not _meta.is_meta_out(meta):
            return meta
        if ret.alias_info is not None and ret.alias_info.is_write:
            t = _written_input(func, ret.alias_info, args, kwargs)
            t._td = None
        else:
            t = TensordTensor(None, meta.shape, meta.stride(), 0, meta.dtype)
        t._error = error
        return t

    if len(returns) == 1:
        return one(returns[0], meta_out)
    return tuple(one(r, m) for r, m in zip(returns, meta_out))


def _like_input(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Optional[torch.Tensor]:
    tensors = {}
    for i, a in enumerate(func._schema.arguments):
        v = args[i] if i < len(args) else kwargs.get(a.name)
        if isinstance(v, torch.Tensor):
            tensors[a.name] = v
    return tensors.get("self", tensors.get("input", next(iter(tensors.values()), None)))


def _decomposing() -> set:
    s = getattr(_state, "decomposing", None)
    if s is None:
        s = _state.decomposing = set()
    return s


# Note [Plain outputs]: (op, argument key) -> (shape, strides, offset, dtype, kind, direct) of
# an op whose one output is a fresh contiguous tensor (kind _FRESH), a view of its first
# argument (_VIEW) or that argument written in place (_WRITTEN: ``add_``), seen before: such a
# call skips the meta lookup's rebuild and the output wrapping's schema walk (the common case:
# pointwise ops, reductions, matmuls, the views between them: t, view, expand ..., and the
# optimizers' in-place updates). A view's offset is kept relative to its base's, which the key
# does not hold. ``direct``: the call's recorded Call once the rule has run again with the key
# (Note [Direct calls]).
_plain: Dict[Any, tuple] = {}
_FRESH, _VIEW, _WRITTEN = 0, 1, 2


def run_rule(func: Any, rule: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """Runs a mapped op: PyTorch's meta for the outputs, the rule's daemon commands for values."""
    key = _meta.key(func, args, kwargs)
    plain = _plain.get(key) if key is not None and not CHECK else None
    if plain is not None:
        shape, stride, offset, dtype, kind, direct = plain
        if direct is not None and direct.session is _connection.current():
            native = _direct.run(direct, args, kwargs)
            if native is not None:
                if kind == _WRITTEN:
                    return args[0]
                if kind == _VIEW:
                    offset += args[0].storage_offset()
                return make(native, shape, stride, offset, dtype)
        if kind == _VIEW:
            offset += args[0].storage_offset()
        meta_out = None
    else:
        meta_out = _meta.run(func, args, kwargs, key)
    uargs = [_unwrap_arg(a) for a in args]
    ukwargs = {k: _unwrap_arg(v) for k, v in kwargs.items()} if kwargs else {}
    if getattr(rule, "torch_args", False):
        native = rule(args, *uargs, **ukwargs)
    elif plain is not None:
        native, direct = _direct.record(func, _connection.session(), args, kwargs, uargs,
                                        ukwargs, _meta.is_pointwise(func), kind == _VIEW, rule)
        if direct is not None:
            _plain[key] = plain[:5] + (direct,)
    else:
        native = rule(*uargs, **ukwargs)
    if native is NotImplemented:
        return native
    if plain is not None:
        if kind == _WRITTEN:
            return args[0]
        return make(native, shape, stride, offset, dtype)
    out = wrap_outputs(func, meta_out, native, args, kwargs)
    if key is not None and type(out) is TensordTensor and len(_plain) < (1 << 16):
        _remember(func, key, out, args)
    return out


def _remember(func: Any, key: Any, out: TensordTensor, args: tuple) -> None:
    """Keeps a plain output's metadata (Note [Plain outputs])."""
    returns = func._schema.returns
    if len(returns) != 1:
        return
    alias = returns[0].alias_info
    if alias is None:
        _plain[key] = (out.shape, out.stride(), 0, out.dtype, _FRESH, None)
    elif not args or type(args[0]) is not TensordTensor:
        return
    elif not alias.is_write:
        _plain[key] = (out.shape, out.stride(), out.storage_offset() - args[0].storage_offset(),
                       out.dtype, _VIEW, None)
    elif out is args[0] and torch.Tag.inplace_view not in func.tags:
        _plain[key] = (out.shape, out.stride(), 0, out.dtype, _WRITTEN, None)


def wrap_outputs(func: Any, meta_out: Any, native: Any, args: tuple,
                 kwargs: Dict[str, Any]) -> Any:
    """TensordTensors for ``native`` (a native tensor, or a tuple/list of them) shaped as
    ``meta_out``. An output aliasing a written input is that input; views keep PyTorch's strides
    (Note [Strides mirror the daemon])."""
    returns = func._schema.returns
    if len(returns) == 1:
        return _wrap_one(func, returns[0], meta_out, native, args, kwargs)
    return tuple(_wrap_one(func, r, m, n, args, kwargs)
                 for r, m, n in zip(returns, meta_out, native))


def _wrap_one(func: Any, ret: Any, meta: Any, native: Any, args: tuple,
              kwargs: Dict[str, Any]) -> Any:
    alias = ret.alias_info
    if isinstance(meta, (list, tuple)):
        natives = list(native) if isinstance(native, (list, tuple)) else [native]
        return type(meta)(_wrap_one(func, ret, m, n, args, kwargs) for m, n in zip(meta, natives))
    if not _meta.is_meta_out(meta):
        return meta
    if alias is not None and alias.is_write:
        return _written_input(func, alias, args, kwargs)
    if CHECK:
        _check(func, meta, native)
    if alias is not None:  # a view: PyTorch's strides, the base's offset added
        base = args[0] if args and isinstance(args[0], TensordTensor) else None
        offset = meta.storage_offset() + (base.storage_offset() if base is not None else 0)
        return TensordTensor(native, meta.shape, meta.stride(), offset, meta.dtype)
    return TensordTensor(native, meta.shape, contiguous_strides(meta.shape), 0, meta.dtype)


def _written_input(func: Any, alias: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    for i, a in enumerate(func._schema.arguments):
        if a.alias_info is not None and a.alias_info.before_set == alias.before_set:
            return args[i] if i < len(args) and not a.kwarg_only else kwargs[a.name]
    return args[0]


def _check(func: Any, meta: torch.Tensor, native: NativeTensor) -> None:
    try:
        shape, dtype = tuple(native.shape), native.dtype.name
    except _errors.Error:
        return  # a poisoned result: its error is raised at the read, as without the check
    want = _transfer.TO_NATIVE.get(meta.dtype)
    if shape != tuple(meta.shape) or (want is not None and dtype != want.name):
        raise AssertionError(f"{func}: the daemon made {dtype}{list(shape)}, PyTorch's meta "
                             f"function says {meta.dtype}{list(meta.shape)}")


def _functional_twin(func: Any) -> Optional[Any]:
    """``aten.squeeze.dim`` for ``aten.squeeze_.dim``: an in-place view op's functional view of
    the same overload name (``_special.inplace_view``)."""
    name = func._schema.name.split("::")[-1]
    if not name.endswith("_") or name.startswith("_foreach"):
        return None
    args = func._schema.arguments
    if not args or args[0].alias_info is None or not args[0].alias_info.is_write:
        return None
    packet = getattr(aten, name[:-1], None)
    if packet is None:
        return None
    return getattr(packet, func._overloadname, None)


_foreach.bind(sys.modules[__name__])
