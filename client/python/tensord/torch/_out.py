"""``out=`` overloads (``aten.max.dim_max``, ``aten.cat.out``) as their functional overload plus
a copy into the ``out`` tensors, as PyTorch's structured kernels do: the functional op is
mapped (or decomposes into ops that are), where an ``out=`` decomposition may reach prims the
device has no rule for (``cat.out`` reaches ``prims.cat``). Only when each ``out`` tensor has
its result's shape (PyTorch would resize it otherwise: left to the decomposition or fallback).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import torch

_twins: Dict[Any, Optional[Any]] = {}


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


def run(func: Any, twin: Any, args: tuple, kwargs: Dict[str, Any], dispatch: Any) -> Any:
    """``func``'s ``out`` tensors, written with ``twin``'s results; NotImplemented where a
    shape differs."""
    schema = func._schema.arguments
    outs, fargs, fkwargs = [], list(args), dict(kwargs)
    for i, a in enumerate(schema):
        if a.is_out:
            outs.append(fkwargs.pop(a.name) if a.name in fkwargs else args[i])
    fargs = fargs[:len([a for a in schema if not a.is_out and not a.kwarg_only])]
    res = dispatch(twin, tuple(fargs), fkwargs)
    results = [res] if len(outs) == 1 else list(res)
    if any(tuple(o.shape) != tuple(r.shape) for o, r in zip(outs, results)):
        return NotImplemented
    for o, r in zip(outs, results):
        if not torch.can_cast(r.dtype, o.dtype):  # PyTorch's rule for out= (no downcast)
            raise RuntimeError(f"{func}: result type {r.dtype} can't be cast to the desired "
                               f"output type {o.dtype}")
        dispatch(torch.ops.aten.copy_.default, (o, r), {})
    return outs[0] if len(outs) == 1 else tuple(outs)
