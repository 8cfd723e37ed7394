"""``max_pool2d_with_indices`` and its backward on the daemon, which has no indices: its
``max_pool2d_backward`` finds the window maxima again from the input. The indices output is a
tensor that raises when read (Note [Poisoned backward values]'s mechanism), and the backward
never reads it."""

from __future__ import annotations

from typing import Any, Dict

import torch

from . import _meta
from ._aten_map import c
from ._special import _handles
from ._tensor import TensordTensor, contiguous_strides

aten = torch.ops.aten


def bind(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The op's arguments by name, defaults filled in."""
    out = {}
    for i, a in enumerate(func._schema.arguments):
        if i < len(args) and not a.kwarg_only:
            out[a.name] = args[i]
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
        else:
            out[a.name] = a.default_value if a.has_default_value() else None
    return out


def _window(a: Dict[str, Any]) -> Dict[str, Any]:
    return dict(kernel_size=list(a["kernel_size"]), stride=list(a["stride"] or []),
                padding=list(a["padding"]), dilation=list(a["dilation"]),
                ceil_mode=bool(a["ceil_mode"]))


def _payload(t: TensordTensor) -> Any:
    from ._dispatch import payload
    return payload(t)


@_handles(aten.max_pool2d_with_indices.default)
def max_pool2d_with_indices(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    meta_out, meta_idx = _meta.run(func, args, kwargs)
    a = bind(func, args, kwargs)
    if a["self"].dim() != 4:
        from ._fallback import run
        return run(func, args, kwargs)
    out = c("max_pool2d", [_payload(a["self"])], **_window(a))
    idx = TensordTensor(None, meta_idx.shape, contiguous_strides(meta_idx.shape), 0, torch.int64)
    idx._error = NotImplementedError(
        "max_pool2d's indices: the tensord daemon does not compute them (its "
        "max_pool2d_backward finds the window maxima from the input); use "
        "return_indices=False")
    return (TensordTensor(out, meta_out.shape, contiguous_strides(meta_out.shape), 0,
                          meta_out.dtype), idx)


@_handles(aten.max_pool2d_with_indices_backward.default)
def max_pool2d_with_indices_backward(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    a = bind(func, args, kwargs)
    x = a["self"]
    g = c("max_pool2d_backward", [_payload(a["grad_output"]), _payload(x)], **_window(a))
    return TensordTensor(g, x.shape, contiguous_strides(x.shape), 0, x.dtype)
