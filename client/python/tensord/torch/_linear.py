"""``F.linear`` on the device as the daemon's one ``linear`` row, with a gradient node of its
own.

Note [One linear]: ``aten::linear`` is CompositeImplicitAutograd: PyTorch runs it as ``t`` and
``addmm`` (or ``matmul`` and ``add``, with views around a batched input) above autograd, two to
four device ops each way, ~9 us of client CPU each. ``register`` gives it a kernel at
AutogradPrivateUse1 instead. Where the call is the common one (tensord tensors of one floating
dtype, an input of at least two dims, a 2-d weight, no bias or a 1-d one of the weight's
rows) it is one daemon ``linear`` Call: through ``_Linear`` (an autograd Function: one node
whose backward is ``grad @ weight``, ``grad^T @ input`` and ``grad.sum``, ordinary device ops,
so create_graph differentiates them again) where a gradient is wanted, else the Call alone.
The forward runs the ``aten.linear`` rule through ``_dispatch.run_rule`` (the meta cache and
Note [Direct calls] apply), directly where no TorchDispatchMode is active and through the
dispatcher below autograd where one is (the mode sees ``aten.linear``). Every other call,
and any call under forward-mode AD or a functorch transform (which a Function here would not
support), takes PyTorch's composite, as before.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.autograd.forward_ad as _fwad

from ._aten_map import c, rule
from ._tensor import TensordTensor

aten = torch.ops.aten
_LINEAR = aten.linear.default


@rule(_LINEAR)
def _linear_rule(input: Any, weight: Any, bias: Any = None) -> Any:
    return c("linear", [input, weight] if bias is None else [input, weight, bias])


_run_rule: Any = None  # _dispatch.run_rule, found at the first call (_dispatch imports this)


def _forward(input: Any, weight: Any, bias: Any) -> Any:
    global _run_rule
    if torch._C._len_torch_dispatch_stack():
        with torch._C._AutoDispatchBelowAutograd():
            return _LINEAR(input, weight, bias)
    if _run_rule is None:
        from ._dispatch import run_rule as _run_rule
    return _run_rule(_LINEAR, _linear_rule, (input, weight, bias), {})


class _Linear(torch.autograd.Function):
    """``linear`` as one node: the forward's one Call, the backward's device ops."""

    @staticmethod
    def forward(ctx: Any, input: Any, weight: Any, bias: Any) -> Any:
        ctx.save_for_backward(input, weight)
        return _forward(input, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        input, weight = ctx.saved_tensors
        need_input, need_weight, need_bias = ctx.needs_input_grad
        flat = grad if grad.dim() == 2 else grad.reshape(-1, grad.size(-1))
        grad_input = grad_weight = grad_bias = None
        if need_input:
            grad_input = flat.mm(weight)
            if grad.dim() != 2:
                grad_input = grad_input.view(input.shape)
        if need_weight:
            rows = input if input.dim() == 2 else input.reshape(-1, input.size(-1))
            grad_weight = flat.t().mm(rows)
        if need_bias:
            grad_bias = flat.sum(0)
        return grad_input, grad_weight, grad_bias


def _fusable(input: Any, weight: Any, bias: Optional[Any]) -> bool:
    if type(input) is not TensordTensor or type(weight) is not TensordTensor:
        return False
    # (``shape`` once, then tuple reads: cheaper than ``dim()`` and ``size()`` calls)
    dtype, shape, w_shape = input.dtype, input.shape, weight.shape
    if not dtype.is_floating_point or weight.dtype != dtype or len(w_shape) != 2 or \
            len(shape) < 2 or shape[-1] != w_shape[1]:
        return False
    if bias is not None:
        if type(bias) is not TensordTensor or bias.dtype != dtype:
            return False
        b_shape = bias.shape
        if len(b_shape) != 1 or b_shape[0] != w_shape[0]:
            return False
    return _fwad._current_level < 0 and not torch._C._are_functorch_transforms_active()


def _linear(input: Any, weight: Any, bias: Any = None) -> Any:
    if not _fusable(input, weight, bias):
        return _LINEAR.decompose(input, weight, bias)
    if torch.is_grad_enabled() and (input.requires_grad or weight.requires_grad or
                                    (bias is not None and bias.requires_grad)):
        return _Linear.apply(input, weight, bias)
    return _forward(input, weight, bias)


def register(lib: "torch.library.Library") -> None:
    """Gives ``aten::linear`` the device's kernel (Note [One linear])."""
    lib.impl("linear", _linear, "AutogradPrivateUse1")
