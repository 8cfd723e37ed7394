"""``MultiheadAttention`` as in ``torch.nn``, composed of the daemon's ops.

Parameters carry PyTorch's names and layouts, so a PyTorch state dict loads as it is:
``in_proj_weight`` ``(3E, E)`` packs the query, key and value projections (or
``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when ``kdim``/``vdim`` differ from
``embed_dim``), ``in_proj_bias`` ``(3E,)``, and ``out_proj`` a ``Linear(E, E)``.
Initialisation is PyTorch's: xavier-uniform projections, zero biases.

Inside, everything runs batch-first as ``(N, heads, L, head_dim)``; ``batch_first=False``
input is transposed on the way in and out. Masks follow PyTorch's MultiheadAttention: a
boolean ``attn_mask``/``key_padding_mask`` is True where attention is NOT allowed, a float
one is added to the scores.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

from .. import _ops
from .._tensor import Tensor, call
from . import functional as F
from . import init
from ._functional_attention import attention_weights
from .layers import Linear, _uniform_param
from .module import Module
from .parameter import Parameter


def _t01(x: Tensor) -> Tensor:
    return call("transpose", [x], {"dim0": 0, "dim1": 1})


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of ``embed_dim / num_heads`` each:
    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) -> (output, weights or None)``."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: Optional[int] = None, vdim: Optional[int] = None,
                 batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("not supported yet: MultiheadAttention(add_bias_kv=True "
                                      "or add_zero_attn=True) (use the defaults, False, and "
                                      "append the extra key/value rows to key and value)")
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be greater "
                             f"than 0, got embed_dim={embed_dim} and num_heads={num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible "
                             f"by num_heads ({num_heads})")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        e, kw = embed_dim, {"dtype": dtype, "device": device}

        def xavier(rows: int, cols: int) -> Any:
            return _uniform_param((rows, cols), math.sqrt(6.0 / (rows + cols)), **kw)

        if self._qkv_same_embed_dim:
            self.in_proj_weight = xavier(3 * e, e)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = xavier(e, e)
            self.k_proj_weight = xavier(e, self.kdim)
            self.v_proj_weight = xavier(e, self.vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter._adopt(_ops.zeros(3 * e, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(e, e, bias=bias, **kw)
        if bias:
            init.zeros_(self.out_proj.bias)

    def _project(self, query: Tensor, key: Tensor, value: Tensor
                 ) -> Tuple[Tensor, Tensor, Tensor]:
        b = self.in_proj_bias
        bq, bk, bv = b.chunk(3) if b is not None else (None, None, None)
        if not self._qkv_same_embed_dim:
            return (F.linear(query, self.q_proj_weight, bq),
                    F.linear(key, self.k_proj_weight, bk),
                    F.linear(value, self.v_proj_weight, bv))
        if query is key and key is value:  # self-attention: one packed projection
            return F.linear(query, self.in_proj_weight, b).chunk(3, dim=-1)
        wq, wk, wv = self.in_proj_weight.chunk(3)
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def _check(self, query: Tensor, key: Tensor, value: Tensor) -> bool:
        """Checks ranks and widths; returns whether the input is batched."""
        q, k, v = list(query.shape), list(key.shape), list(value.shape)
        where = f"MultiheadAttention: query {q}, key {k} and value {v}"
        if len(q) not in (2, 3) or not len(q) == len(k) == len(v):
            raise RuntimeError(f"{where} must all be 3-d (batched) or all 2-d (unbatched)")
        if q[-1] != self.embed_dim or k[-1] != self.kdim or v[-1] != self.vdim:
            raise RuntimeError(f"{where}: expected last dims {self.embed_dim}, {self.kdim} and "
                               f"{self.vdim} (embed_dim, kdim, vdim)")
        if k[:-1] != v[:-1]:
            raise RuntimeError(f"{where}: key and value must match in all but the last dim")
        batch = 0 if self.batch_first else 1
        if len(q) == 3 and q[batch] != k[batch]:
            raise RuntimeError(f"{where}: query and key batch sizes differ "
                               f"(batch_first={self.batch_first})")
        return len(q) == 3

    def _masks(self, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor],
               n: int, length: int, source: int) -> List[Optional[Tensor]]:
        """The masks as ``(N, H, L, S)``-broadcastable tensors."""
        masks: List[Optional[Tensor]] = []
        h = self.num_heads
        if attn_mask is not None:
            shape = list(attn_mask.shape)
            if shape == [length, source]:
                masks.append(attn_mask)
            elif shape == [n * h, length, source]:
                masks.append(call("reshape", [attn_mask], {"shape": [n, h, length, source]}))
            else:
                raise RuntimeError(f"MultiheadAttention: attn_mask of shape {shape} should be "
                                   f"{[length, source]} or {[n * h, length, source]}")
        if key_padding_mask is not None:
            if list(key_padding_mask.shape) != [n, source]:
                raise RuntimeError(f"MultiheadAttention: key_padding_mask of shape "
                                   f"{list(key_padding_mask.shape)} should be {[n, source]}")
            masks.append(call("reshape", [key_padding_mask], {"shape": [n, 1, 1, source]}))
        return masks

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Optional[Tensor] = None, need_weights: bool = True,
                attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        batched = self._check(query, key, value)
        self_attention = query is key and key is value
        if not batched:
            query, key, value = (call("unsqueeze", [t], {"dim": 0}) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = call("unsqueeze", [key_padding_mask], {"dim": 0})
        elif not self.batch_first:
            query, key, value = _t01(query), _t01(key), _t01(value)
        if self_attention:
            key = value = query  # keeps the packed projection for self-attention
        n, length, source = query.shape[0], query.shape[1], key.shape[1]
        masks = self._masks(attn_mask, key_padding_mask, n, length, source)
        h, d = self.num_heads, self.head_dim
        q, k, v = (call("transpose", [t.reshape(n, -1, h, d)], {"dim0": 1, "dim1": 2})
                   for t in self._project(query, key, value))
        # is_causal is PyTorch's hint that attn_mask is the causal mask; without a mask, the
        # causal mask is made here.
        causal = is_causal and attn_mask is None
        w = attention_weights(q, k, masks, self.dropout if self.training else 0.0, causal,
                              None, allowed_when_true=False)
        out = call("transpose", [call("matmul", [w, v])], {"dim0": 1, "dim1": 2})
        out = self.out_proj(out.reshape(n, length, self.embed_dim))
        if not batched:
            out = call("squeeze", [out], {"dim": 0})
        elif not self.batch_first:
            out = _t01(out)
        if not need_weights:
            return out, None
        if average_attn_weights:
            w = call("mean", [w], {"dim": [1]})
        return out, (w if batched else call("squeeze", [w], {"dim": 0}))

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")


__all__: List[str] = ["MultiheadAttention"]
