"""``F.scaled_dot_product_attention`` on the device: PyTorch sends it to
``_scaled_dot_product_flash_attention_for_cpu`` (and its backward), which map here onto the
daemon's fused rows ``scaled_dot_product_flash_attention`` and its ``_backward`` (one kernel
each way, on the daemon's CPU; their log-sum-exp is ``[N, H, L]`` as PyTorch's). Grouped-query
attention (fewer key heads): the key and value repeated to the query's heads on the daemon
(``repeat_interleave``'s order), their gradients summed back over each group.

Not here: dropout (``dropout_p > 0``; PyTorch's own decomposition raises) and a daemon whose
tensors live on CUDA (no fused rows there): ``_composites.sdpa_flash_cpu`` composes the forward
and the backward takes the CPU fallback, as before.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from ._aten_map import c, rule
from ._aten_map_nn import _fused_rows, torch_args

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
