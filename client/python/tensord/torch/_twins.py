"""``out=`` and in-place overloads as their functional overload plus a copy into the written
tensors, as PyTorch's structured kernels do: the functional op is mapped (or decomposes into ops
that are), where the decomposition of an ``out=`` or in-place op may reach prims the device has
no rule for (``cat.out`` reaches ``prims.cat``, ``atan2_`` ``prims.atan2``). PyTorch's checks
kept: no downcast into the written tensor, an in-place result has its input's shape, and an
``out`` tensor of another shape is resized first (PyTorch's ``resize_output``; ``_resize``).
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, Optional

import torch

_twins: Dict[Any, Optional[Any]] = {}  # out= op -> its functional twin or None
_inplace_twins: Dict[Any, Optional[Any]] = {}  # in-place op -> its functional twin or None


def functional_twin(func: Any) -> Optional[Any]:
    """The overload of ``func``'s packet taking ``func``'s arguments but its ``out`` ones and
    returning as many tensors; None for an op without ``out`` arguments or such a twin."""
    if func in _twins:
        return _twins[func]
    twin = None
    args = func._schema.arguments
    outs = [a for a in args if a.is_out]
    if outs:
        want = [(a.name, str(a.type)) for a in args if not a.is_out]
        packet = getattr(torch.ops.aten, func._schema.name.split("::")[-1], None)
        for over in (packet.overloads() if packet is not None else ()):
            cand = getattr(packet, over)
            s = cand._schema
            if (not any(a.is_out for a in s.arguments) and len(s.returns) == len(outs)
                    and [(a.name, str(a.type)) for a in s.arguments] == want
                    and not any(r.alias_info for r in s.returns)):
                twin = cand
                break
    _twins[func] = twin
    return twin


def inplace_twin(func: Any) -> Optional[Any]:
    """The functional overload of an in-place op: of ``name`` for ``name_``, taking the same
    arguments by name and type (maybe in another order: ``polygamma_(self, n)`` is
    ``polygamma(n, self)``; ``pow_.Scalar`` is ``pow.Tensor_Scalar``, not ``pow.Scalar``)."""
    if func in _inplace_twins:
        return _inplace_twins[func]
    twin = None
    name = func._schema.name.split("::")[-1]
    args = func._schema.arguments
    if (name.endswith("_") and not name.startswith("_foreach") and args
            and args[0].alias_info is not None and args[0].alias_info.is_write):
        want = sorted((a.name, str(a.type)) for a in args)
        packet = getattr(torch.ops.aten, name[:-1], None)
        overs = list(packet.overloads()) if packet is not None else []
        overs.sort(key=lambda o: o != func._overloadname)  # the same overload name first
        for over in overs:
            s = getattr(packet, over)._schema
            if (len(s.returns) == 1 and not s.returns[0].alias_info
                    and sorted((a.name, str(a.type)) for a in s.arguments) == want):
                twin = getattr(packet, over)
                break
    _inplace_twins[func] = twin
    return twin


def run(func: Any, twin: Any, args: tuple, kwargs: Dict[str, Any], dispatch: Any) -> Any:
    """``func``'s ``out`` tensors, resized where their shape differs and written with ``twin``'s
    results."""
    schema = func._schema.arguments
    outs, fargs, fkwargs = [], list(args), dict(kwargs)
    for i, a in enumerate(schema):
        if a.is_out:
            outs.append(fkwargs.pop(a.name) if a.name in fkwargs else args[i])
    fargs = fargs[:len([a for a in schema if not a.is_out and not a.kwarg_only])]
    res = dispatch(twin, tuple(fargs), fkwargs)
    results = [res] if len(outs) == 1 else list(res)
    for o, r in zip(outs, results):
        _check_cast(func, o, r)
        if tuple(o.shape) != tuple(r.shape):
            _resize_output(o, r.shape, dispatch)
        _write(func, o, r, dispatch)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _resize_output(out: Any, shape: Any, dispatch: Any) -> None:
    """PyTorch's ``resize_output``: an ``out`` tensor of another shape is resized (``_resize``),
    with PyTorch's deprecation warning unless it was empty."""
    if out.numel() != 0:
        warnings.warn(f"An output with one or more elements was resized since it had shape "
                      f"{list(out.shape)}, which does not match the required output shape "
                      f"{list(shape)}. This behavior is deprecated, and in a future PyTorch "
                      "release outputs will not be resized unless they have zero elements. You "
                      "can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                      "elements with t.resize_(0).", UserWarning, stacklevel=2)
    dispatch(torch.ops.aten.resize_.default, (out, list(shape)), {})


def _check_cast(func: Any, dst: Any, value: Any) -> None:
    if not torch.can_cast(value.dtype, dst.dtype):  # PyTorch's rule (no downcast)
        raise RuntimeError(f"{func}: result type {value.dtype} can't be cast to the desired "
                           f"output type {dst.dtype}")


def _write(func: Any, dst: Any, value: Any, dispatch: Any) -> None:
    _check_cast(func, dst, value)
    dispatch(torch.ops.aten.copy_.default, (dst, value), {})


def run_inplace(func: Any, twin: Any, args: tuple, kwargs: Dict[str, Any],
                dispatch: Any) -> Any:
    """``func``'s written input (its first argument), given ``twin``'s value; the twin's
    arguments are ``func``'s by name (``polygamma_(self, n)`` is ``polygamma(n, self)``)."""
    named = {a.name: (args[i] if i < len(args) else kwargs[a.name])
             for i, a in enumerate(func._schema.arguments)
             if i < len(args) or a.name in kwargs}
    targs, tkwargs = [], {}
    for a in twin._schema.arguments:
        if a.name not in named:
            continue
        if a.kwarg_only:
            tkwargs[a.name] = named[a.name]
        else:
            targs.append(named[a.name])
    out = dispatch(twin, tuple(targs), tkwargs)
    self = named[func._schema.arguments[0].name]
    if tuple(out.shape) != tuple(self.shape):
        raise RuntimeError(f"{func}: output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(out.shape)}")
    _write(func, self, out, dispatch)
    return self
