"""Gradient clipping, as ``torch.nn.utils``: ``clip_grad_norm_`` and ``clip_grad_value_``.

The norms, the scale and the in-place updates of the ``.grad`` tensors are daemon ops, queued;
the total norm comes back as a daemon tensor, so reading it is the caller's choice (only
``error_if_nonfinite=True`` reads it here, as PyTorch does). ``clip_grad_norm_`` is one daemon
row that reads each parameter's ``.grad`` where it has one (Note [Optimizer steps read .grad]):
no wait. Against a daemon without that row, and for ``clip_grad_value_``, learning which
parameters have a ``.grad`` (an op on a missing one fails, and PyTorch skips them) costs one
wait: one batched question for all the parameters, never one per parameter.
"""

from __future__ import annotations

import math
from typing import Iterable, List, Optional, Union

from ... import _grad, _ops, _tensor
from ..._tensor import Tensor
from ...autograd import grads_of

call = _tensor.call
_Params = Union[Tensor, Iterable[Tensor]]


def _params(parameters: _Params) -> List[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"clip_grad: expected tensord Tensors as parameters, got "
                            f"{type(p).__name__}")
    return params


def _grads(params: List[Tensor]) -> List[Tensor]:
    return [g for g in grads_of(params) if g is not None] if params else []


def _check_finite(total: Tensor, norm_type: float) -> None:
    if not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To "
                           "disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")


def clip_grad_norm_(parameters: _Params, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    """Scales the gradients of ``parameters`` in place so that their joint ``norm_type``-norm
    (that of the per-gradient norms) is at most ``max_norm``; returns that total norm before
    scaling, a 0-d daemon tensor. ``foreach`` is accepted for PyTorch 2's signature (the
    daemon has one path)."""
    max_norm, norm_type = float(max_norm), float(norm_type)
    params = _params(parameters)
    if not params:
        return _ops.tensor(0.0)
    # error_if_nonfinite reads the total before anything is scaled: the composed path.
    if not error_if_nonfinite and "clip_grad_norm_" in _tensor._session_of(params).catalog:
        return call("clip_grad_norm_", params, {"max_norm": max_norm, "norm_type": norm_type})
    grads = _grads(params)
    if not grads:
        return _ops.tensor(0.0)
    total = _total_norm(grads, norm_type)
    if error_if_nonfinite:
        _check_finite(total, norm_type)
    with _grad.no_grad():
        coef = call("clamp", [max_norm / (total + 1e-6)], {"max": 1.0})
        for g in grads:
            call("mul_", [g, coef])
    return total


def _total_norm(grads: List[Tensor], norm_type: float) -> Tensor:
    """The norm of the gradients' norms, as daemon ops (queued)."""
    if not grads:
        return _ops.tensor(0.0)
    with _grad.no_grad():
        if norm_type == math.inf:
            norms = [call("amax", [call("abs", [g])]) for g in grads]
            total = norms[0] if len(norms) == 1 else call("amax", [call("stack", norms)])
        else:
            norms = [call("norm", [g], {"p": norm_type}) for g in grads]
            total = call("norm", [call("stack", norms)], {"p": norm_type})
    return total


def clip_grad_value_(parameters: _Params, clip_value: float,
                     foreach: Optional[bool] = None) -> None:
    """Clamps the gradients of ``parameters`` to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    grads = _grads(_params(parameters))
    with _grad.no_grad():
        for g in grads:
            call("clamp_", [g], {"min": -clip_value, "max": clip_value})


__all__: List[str] = ["clip_grad_norm_", "clip_grad_value_"]
