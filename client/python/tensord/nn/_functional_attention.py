"""``scaled_dot_product_attention``, as ``torch.nn.functional`` has it, composed of the
daemon's ``matmul``, ``masked_fill``, ``softmax`` and ``dropout`` (so the daemon's autograd
differentiates it), plus the mask helpers that ``MultiheadAttention`` shares with it.

Mask conventions differ between PyTorch's two APIs, and both are kept: for
``scaled_dot_product_attention`` a boolean ``attn_mask`` is True where a query MAY attend;
for ``MultiheadAttention`` a boolean mask is True where it may NOT. A float mask is added to
the scores in both.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from .. import _dtype
from .._tensor import Tensor, call


def causal_mask(q_len: int, k_len: int, like: Tensor) -> Tensor:
    """Boolean ``(q_len, k_len)``: True on and below the diagonal (top-left aligned, as
    PyTorch's ``is_causal``), on ``like``'s device."""
    ones = call("ones", [], {"shape": [q_len, k_len], "dtype": _dtype.bool_,
                             "device": like.device}, session=like._session)
    return call("tril", [ones])


def apply_mask(scores: Tensor, mask: Optional[Tensor], allowed_when_true: bool) -> Tensor:
    """``scores`` with a boolean mask turned into ``-inf`` where attention is not allowed,
    or a float mask added."""
    if mask is None:
        return scores
    if mask.dtype is _dtype.bool_:
        blocked = call("logical_not", [mask]) if allowed_when_true else mask
        return call("masked_fill", [scores, blocked, float("-inf")])
    if not mask.dtype.is_floating_point:
        raise TypeError(f"attention masks must be bool or floating point, got {mask.dtype}")
    return scores + mask


def attention_weights(query: Tensor, key: Tensor, masks: Sequence[Optional[Tensor]],
                      dropout_p: float, is_causal: bool, scale: Optional[float],
                      allowed_when_true: bool) -> Tensor:
    """``dropout(softmax(query @ key^T * scale + masks))`` over the last dim; each mask is
    applied in turn (a boolean one as ``-inf``, a float one added)."""
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    scores = call("matmul", [query, call("transpose", [key], {"dim0": -2, "dim1": -1})]) * s
    if is_causal:
        scores = apply_mask(scores, causal_mask(query.shape[-2], key.shape[-2], query), True)
    for m in masks:
        scores = apply_mask(scores, m, allowed_when_true)
    w = call("softmax", [scores], {"dim": -1})
    if dropout_p > 0.0:
        w = call("dropout", [w], {"p": float(dropout_p), "training": True})
    return w


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Optional[Tensor] = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` over ``(..., L, E)`` queries and
    ``(..., S, E)`` keys, ``(..., S, Ev)`` values. ``attn_mask`` broadcasts to ``(..., L, S)``:
    boolean True where a query may attend, or float added to the scores. ``is_causal``
    masks out keys after each query (no ``attn_mask`` with it). ``scale`` defaults to
    ``1/sqrt(E)``. Dropout draws from the daemon's session generator."""
    if enable_gqa:
        raise NotImplementedError("not supported yet: scaled_dot_product_attention("
                                  "enable_gqa=True) (use key and value with as many heads as "
                                  "the query, e.g. repeated along the head dim)")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: pass either attn_mask or "
                         "is_causal=True, not both")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1], got "
                         f"{dropout_p}")
    _check_qkv(query, key, value)
    w = attention_weights(query, key, [attn_mask], dropout_p, is_causal, scale, True)
    return call("matmul", [w, value])


def _check_qkv(query: Tensor, key: Tensor, value: Tensor) -> None:
    q, k, v = list(query.shape), list(key.shape), list(value.shape)
    if len(q) < 2 or len(k) < 2 or len(v) < 2:
        raise RuntimeError(f"scaled_dot_product_attention: query, key and value need at least "
                           f"2 dims, got shapes {q}, {k} and {v}")
    if q[-1] != k[-1] or k[-2] != v[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: query {q} and key {k} must share "
                           f"the last dim, key and value {v} the next-to-last")

