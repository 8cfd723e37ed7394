"""``scaled_dot_product_attention``, as ``torch.nn.functional`` has it: the daemon's row of
that name (one fused kernel each way on the CPU, composed on other devices), or, with dropout,
composed here of the daemon's ``matmul``, ``masked_fill``, ``softmax`` and ``dropout`` (so the
daemon's autograd differentiates it); plus the mask helpers that ``MultiheadAttention`` shares
with it.

Mask conventions differ between PyTorch's two APIs, and both are kept: for
``scaled_dot_product_attention`` a boolean ``attn_mask`` is True where a query MAY attend;
for ``MultiheadAttention`` a boolean mask is True where it may NOT. A float mask is added to
the scores in both.

Note [Attention without shape waits]: the shape of a tensor an op just made is known to the
client only once the daemon acknowledged the batch that made it, i.e. once that batch ran. A
shape read in a model's forward therefore drains the queue: the client stops until the daemon
has caught up, then the daemon idles while the client queues the rest (on a loaded 2-CPU VM
the tiny GPT step of examples/python/gpt_lm.py took 140-270 ms with the 8 waits its attention
made, 65-85 ms without). So the causal mask and the default scale are made by the daemon
from the operands themselves (``causal_blocked``, ``default_scale``), and the operands' shapes
are checked here only when the client already has them; otherwise a mismatch is the daemon's
``matmul`` error, raised at the next read like any op's.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Union

from .. import _dtype
from .._tensor import Tensor, call


def _plane(t: Tensor, keep: int) -> Tensor:
    """A view of ``t``'s first ``keep``-dim slice (the last ``keep`` dims, index 0 in every
    leading dim), whatever ``t``'s rank: no shape needed."""
    flat = call("flatten", [call("unsqueeze", [t], {"dim": 0})],
                {"start_dim": 0, "end_dim": -keep - 1})
    return call("select", [flat], {"dim": 0, "index": 0})


def causal_blocked(scores: Tensor) -> Tensor:
    """Boolean ``(L, S)`` for ``(..., L, S)`` scores: True strictly above the diagonal (keys
    after the query, top-left aligned as PyTorch's ``is_causal``), made by the daemon."""
    ones = call("ones_like", [_plane(scores, 2)], {"dtype": _dtype.bool_})
    return call("triu", [ones], {"diagonal": 1})


def default_scale(query: Tensor) -> Union[float, Tensor]:
    """``1 / sqrt(E)`` for ``(..., E)`` queries: a float when the client has the shape, else a
    0-dim tensor the daemon computes (Note [Attention without shape waits])."""
    if query._info is not None:
        return 1.0 / math.sqrt(query.shape[-1])
    # float64, as a Python float: a 0-dim tensor leaves the scores' dtype as it is.
    e = call("sum", [call("ones_like", [_plane(query, 1)], {"dtype": _dtype.float64})])
    return call("rsqrt", [e])


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
    s = default_scale(query) if scale is None else float(scale)
    scores = call("matmul", [query, call("transpose", [key], {"dim0": -2, "dim1": -1})]) * s
    if is_causal:
        scores = call("masked_fill", [scores, causal_blocked(scores), float("-inf")])
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
    ``1/sqrt(E)``. ``enable_gqa`` lets key and value have fewer heads (dim -3) than the
    query, each serving a group of query heads. Without dropout the call is the daemon's row of
    that name (one command, no shape read); dropout draws from the daemon's session generator."""
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: pass either attn_mask or "
                         "is_causal=True, not both")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1], got "
                         f"{dropout_p}")
    if all(t._info is not None for t in (query, key, value)):  # else the daemon checks
        _check_qkv(query, key, value)
    if attn_mask is not None and attn_mask.dtype is not _dtype.bool_ and \
            not attn_mask.dtype.is_floating_point:
        raise TypeError(f"attention masks must be bool or floating point, got "
                        f"{attn_mask.dtype}")
    if dropout_p == 0.0:
        ins = [query, key, value] + ([attn_mask] if attn_mask is not None else [])
        return call("scaled_dot_product_attention", ins,
                    {"is_causal": bool(is_causal), "enable_gqa": bool(enable_gqa),
                     **({"scale": float(scale)} if scale is not None else {})})
    if enable_gqa:
        raise NotImplementedError("not supported yet: scaled_dot_product_attention("
                                  "enable_gqa=True, dropout_p > 0) (use key and value with as "
                                  "many heads as the query, e.g. repeated along the head dim)")
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

