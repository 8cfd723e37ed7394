"""``F.scaled_dot_product_attention`` on the device, on the daemon's fused rows
``scaled_dot_product_flash_attention`` and its ``_backward`` (one kernel each way, on the
daemon's CPU; their log-sum-exp is ``[N, H, L]`` as PyTorch's).

PyTorch's own ``scaled_dot_product_attention`` (CompositeImplicitAutograd) picks the math path
for a PrivateUse1 device: a dozen ops each way. ``register`` gives the op a kernel at
AutogradPrivateUse1 that calls ``_scaled_dot_product_flash_attention_for_cpu`` instead where
that op's semantics hold (4-d, one head size, no dropout, a CPU daemon), as PyTorch does on
its CPU; PyTorch's autograd records that op and its backward, and both map here onto the fused
rows. Grouped-query attention (fewer key heads): the key and value repeated to the query's heads
on the daemon (``repeat_interleave``'s order), their gradients summed back over each group.

The other calls take PyTorch's composite: dropout (``dropout_p > 0``), other ranks or head
sizes, a float mask that requires grad (the fused backward gives the mask none), and a daemon
whose tensors live on CUDA (no fused rows there; ``_composites.sdpa_flash_cpu`` composes the
flash op's forward there and its backward takes the CPU fallback, as before).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from ._aten_map import c, rule, torch_args
from ._aten_map_nn import _fused_rows

aten = torch.ops.aten


def _repeat_heads(x: Any, shape: torch.Size, heads: int) -> Any:
    """[N, Hk, S, D] -> [N, heads, S, D], each key head repeated heads // Hk times in a row."""
    n, hk, s, d = shape
    if hk == heads:
        return x
    x = c("expand", [c("unsqueeze", [x], dim=2)], size=[n, hk, heads // hk, s, d])
    return c("reshape", [x], shape=[n, heads, s, d])


def _sum_groups(g: Any, shape: torch.Size, heads: int) -> Any:
    """The gradient of _repeat_heads: [N, heads, S, D] summed back to [N, Hk, S, D]."""
    n, hk, s, d = shape
    if hk == heads:
        return g
    return c("sum", [c("reshape", [g], shape=[n, hk, heads // hk, s, d])], dim=[2])


def _scale(scale: Optional[float]) -> Optional[float]:
    return None if scale is None else float(scale)


@torch_args
def flash_attention(targs: tuple, query: Any, key: Any, value: Any, dropout_p: float = 0.0,
                    is_causal: bool = False, *, attn_mask: Any = None,
                    scale: Optional[float] = None) -> Any:
    """(output, logsumexp) from the fused row; NotImplemented where it does not apply.
    Called by ``_composites.sdpa_flash_cpu`` (the op's handler) through ``run_rule``."""
    if dropout_p != 0.0 or not _fused_rows():
        return NotImplemented
    heads = targs[0].shape[1]
    ins = [query, _repeat_heads(key, targs[1].shape, heads),
           _repeat_heads(value, targs[2].shape, heads)]
    if attn_mask is not None:
        ins.append(attn_mask)
    out, lse = c("scaled_dot_product_flash_attention", ins, is_causal=bool(is_causal),
                 scale=_scale(scale))
    return out, lse


@rule(aten._scaled_dot_product_flash_attention_for_cpu_backward.default)
@torch_args
def _flash_attention_backward(targs: tuple, grad_out: Any, query: Any, key: Any, value: Any,
                              out: Any, logsumexp: Any, dropout_p: float, is_causal: bool, *,
                              attn_mask: Any = None, scale: Optional[float] = None) -> Any:
    """(grad_query, grad_key, grad_value) from the fused backward row (the out and
    logsumexp are the fused forward's)."""
    if dropout_p != 0.0 or not _fused_rows():
        return NotImplemented
    heads = targs[1].shape[1]
    ins = [grad_out, query, _repeat_heads(key, targs[2].shape, heads),
           _repeat_heads(value, targs[3].shape, heads), out, logsumexp]
    if attn_mask is not None:
        ins.append(attn_mask)
    dq, dk, dv = c("scaled_dot_product_flash_attention_backward", ins,
                   is_causal=bool(is_causal), scale=_scale(scale))
    return (dq, _sum_groups(dk, targs[2].shape, heads),
            _sum_groups(dv, targs[3].shape, heads))


def _fusable(query: Any, key: Any, value: Any, attn_mask: Any, dropout_p: float,
             is_causal: bool, enable_gqa: bool) -> bool:
    """Whether the call is one ``_scaled_dot_product_flash_attention_for_cpu`` computes."""
    from ._tensor import TensordTensor
    ts = (query, key, value) + ((attn_mask,) if attn_mask is not None else ())
    if dropout_p != 0.0 or not all(type(t) is TensordTensor for t in ts):
        return False
    if any(t.dim() != 4 for t in (query, key, value)) or not query.dtype.is_floating_point:
        return False
    if key.dtype != query.dtype or value.dtype != query.dtype:
        return False
    n, hq, lq, e = query.shape
    if key.size(0) != n or value.size(0) != n or key.size(-1) != e or value.size(-1) != e:
        return False
    hk = key.size(1)
    if value.size(1) != hk or value.size(2) != key.size(2) or \
            not (hk == hq or (enable_gqa and hk > 0 and hq % hk == 0)):
        return False
    if attn_mask is not None:
        if is_causal or attn_mask.requires_grad or \
                attn_mask.dtype not in (torch.bool, query.dtype):
            return False
        try:
            full = (n, hq, lq, key.size(2))
            if torch.broadcast_shapes(tuple(attn_mask.shape), full) != full:
                return False
        except RuntimeError:
            return False
    return _fused_rows()


def _sdpa(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0,
          is_causal: bool = False, *, scale: Optional[float] = None,
          enable_gqa: bool = False) -> Any:
    if _fusable(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa):
        return aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, 0.0, is_causal, attn_mask=attn_mask, scale=scale)[0]
    return aten.scaled_dot_product_attention.default.decompose(
        query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)


def register(lib: "torch.library.Library") -> None:
    """Gives ``aten::scaled_dot_product_attention`` the device's kernel (the module's
    docstring)."""
    lib.impl("scaled_dot_product_attention", _sdpa, "AutogradPrivateUse1")
