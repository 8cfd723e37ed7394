"""The attention reference the native client's SDPA tests compare with (test_nn_attention.py,
test_nn_transformer.py): PyTorch's scaled_dot_product_attention semantics written with torch
1.13 ops (Debian's torch has no SDPA), and random boolean masks."""

from __future__ import annotations

import math

import numpy as np
import torch


def reference(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
              enable_gqa=False):
    """softmax(q k^T * scale + mask) v; ``dropout_p`` is accepted for the signature (the
    comparisons run without dropout)."""
    assert dropout_p == 0.0
    if enable_gqa and k.shape[-3] != q.shape[-3]:
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
        v = v.repeat_interleave(q.shape[-3] // v.shape[-3], dim=-3)
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * s
    if is_causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        scores = (scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool
                  else scores + attn_mask)
    return torch.softmax(scores, -1) @ v


def bool_mask(*shape, seed=0, p=0.5):
    """A random boolean mask, True with probability ``p``, with at least one True per row (no
    row fully blocked)."""
    m = np.random.default_rng(seed).random(shape) < p
    m[..., 0] = True
    return m
