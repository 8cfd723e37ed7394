"""ATen ops the device writes as other PyTorch ops on its own tensors: each op below runs as a
few ordinary dispatched ops (which map onto the daemon), not as a daemon row of its own.

- ``_thnn_fused_lstm_cell`` and its backward: what ``nn.LSTM`` calls on an accelerator. The
  workspace is this module's own layout (the four activated gates, ``[B, 4H]``), read only by
  the backward here.
- advanced indexing with integer index tensors: ``_indexing`` (Note [Linearised indices]).
- ``lerp`` (scalar weight), ``addcmul``, ``addcdiv`` and their in-place forms: the optimizers'
  pointwise steps (Adam's), in ATen's CPU kernels' order of operations. PyTorch's reference
  decompositions of them cost ~1-3 ms of client CPU per call (their Python wrappers); these
  cost their two or three device ops. Other dtypes and shapes take the decomposition.
"""

from __future__ import annotations

from typing import Any, Dict

import torch

from ._special import _handles

aten = torch.ops.aten


@_handles(aten._thnn_fused_lstm_cell.default)
def fused_lstm_cell(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    input_gates, hidden_gates, cx = args[:3]
    input_bias = args[3] if len(args) > 3 else kwargs.get("input_bias")
    hidden_bias = args[4] if len(args) > 4 else kwargs.get("hidden_bias")
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, dim=1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    hy = o * cy.tanh()
    return hy, cy, torch.cat([i, f, g, o], dim=1)


@_handles(aten._thnn_fused_lstm_cell_backward_impl.default)
def fused_lstm_cell_backward(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    grad_hy, grad_cy, cx, cy, workspace, has_bias = args
    i, f, g, o = workspace.chunk(4, dim=1)
    tanh_cy = cy.tanh()
    d_cy = torch.zeros_like(cy) if grad_cy is None else grad_cy
    if grad_hy is not None:
        d_cy = d_cy + grad_hy * o * (1 - tanh_cy * tanh_cy)
        d_o = grad_hy * tanh_cy
    else:
        d_o = torch.zeros_like(cy)
    grad_gates = torch.cat([d_cy * g * i * (1 - i), d_cy * cx * f * (1 - f),
                            d_cy * i * (1 - g * g), d_o * o * (1 - o)], dim=1)
    grad_bias = grad_gates.sum(0) if has_bias else None
    return grad_gates, d_cy * f, grad_bias


def _same_float(*ts: Any) -> bool:
    """All tensord tensors of one floating dtype (the composites' case)."""
    from ._tensor import TensordTensor
    return all(type(t) is TensordTensor for t in ts) and ts[0].dtype.is_floating_point and \
        all(t.dtype == ts[0].dtype for t in ts)


def _decomposed(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    from torch._decomp import decomposition_table
    return decomposition_table[func](*args, **kwargs)


def _in_place(func: Any, args: tuple, kwargs: Dict[str, Any], out: Any) -> Any:
    """Binds ``out``'s value to ``args[0]``, as the dispatcher does for an in-place op run as
    its functional twin."""
    from . import _dispatch
    _dispatch.assign(args[0], _dispatch.payload(out))
    return args[0]


def _lerp(start: Any, end: Any, weight: float) -> Any:
    # ATen's lerp: start + w * (end - start) for |w| < 0.5, else end - (end - start) * (1 - w)
    if abs(weight) < 0.5:
        return start + (end - start) * weight
    return end - (end - start) * (1.0 - weight)


@_handles(aten.lerp.Scalar, aten.lerp_.Scalar)
def lerp(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    start, end = args[:2]
    weight = args[2] if len(args) > 2 else kwargs["weight"]
    inplace = func is aten.lerp_.Scalar
    if not (_same_float(start, end) and isinstance(weight, (int, float))
            and (not inplace or start.shape == torch.broadcast_shapes(start.shape, end.shape))):
        return _decomposed(func, args, kwargs)
    out = _lerp(start, end, float(weight))
    return _in_place(func, args, kwargs, out) if inplace else out


@_handles(aten.addcmul.default, aten.addcmul_.default, aten.addcdiv.default,
          aten.addcdiv_.default)
def addc(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    x, t1, t2 = args[:3]
    value = args[3] if len(args) > 3 else kwargs.get("value", 1)
    inplace = func in (aten.addcmul_.default, aten.addcdiv_.default)
    if not (_same_float(x, t1, t2) and isinstance(value, (int, float)) and
            (not inplace or x.shape == torch.broadcast_shapes(x.shape, t1.shape, t2.shape))):
        return _decomposed(func, args, kwargs)
    scaled = t1 if value == 1 else t1 * value  # ATen: self + value * t1 * t2 (or / t2)
    out = x + (scaled * t2 if func in (aten.addcmul.default, aten.addcmul_.default)
               else scaled / t2)
    return _in_place(func, args, kwargs, out) if inplace else out


@_handles(aten._scaled_dot_product_flash_attention_for_cpu.default)
def sdpa_flash_cpu(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """(output, logsumexp) as PyTorch's CPU flash kernel returns them: on a CPU daemon the
    fused rows (``_attention.flash_attention``); elsewhere the output by the math path, the
    log-sum-exp of each query's scaled, masked scores (``[N, H, L]``). PyTorch's own
    decomposition returns the attention weights in the second place."""
    from . import _attention, _dispatch
    fused = _dispatch.run_rule(func, _attention.flash_attention, args, kwargs)
    if fused is not NotImplemented:
        return fused
    names = ("query", "key", "value", "dropout_p", "is_causal")
    a = dict(zip(names, args), **kwargs)
    q, k, v = a["query"], a["key"], a["value"]
    dropout_p, is_causal = a.get("dropout_p", 0.0), a.get("is_causal", False)
    mask, scale = a.get("attn_mask"), a.get("scale")
    if dropout_p != 0.0:
        return _decomposed(func, args, kwargs)  # which raises PyTorch's error
    out, _ = aten._scaled_dot_product_attention_math.default(
        q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=is_causal, scale=scale,
        enable_gqa=q.size(1) != k.size(1))
    if k.size(1) != q.size(1):  # grouped-query attention: each key head serves a group
        k = k.repeat_interleave(q.size(1) // k.size(1), dim=1)
    s = scale if scale is not None else q.size(-1) ** -0.5
    scores = torch.matmul(q, k.transpose(-2, -1)) * s
    if is_causal:
        keep = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if mask is not None:
        scores = (scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool
                  else scores + mask)
    out = out.permute(2, 0, 1, 3).contiguous().permute(1, 2, 0, 3)  # the kernel's layout
    return out, torch.logsumexp(scores, dim=-1)
