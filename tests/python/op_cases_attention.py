"""The attention reference cases of op_cases.py: the composite row scaled_dot_product_attention
(causal, bool and float masks, broadcast batch dims, grouped-query heads) and its fused CPU rows
scaled_dot_product_flash_attention (output, log-sum-exp: the latter carries no gradient, as
PyTorch's flash op's) and _backward, against PyTorch's semantics written in torch 1.13 ops."""

from __future__ import annotations

import math
from typing import Any, List

import torch

from op_case_inputs import NC, Case, R


def _keep(*shape: int, seed: int = 0) -> torch.Tensor:
    """A bool mask (True: may attend) with one True per row at least."""
    m = R(*shape, dtype=torch.bool, seed=seed)
    m[..., 0] = True
    return m


def _scores(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor = None,
            is_causal: bool = False, scale: float = None) -> torch.Tensor:
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return s


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor = None,
          is_causal: bool = False, scale: float = None, enable_gqa: bool = False) -> torch.Tensor:
    if enable_gqa and k.shape[-3] != q.shape[-3]:
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
        v = v.repeat_interleave(q.shape[-3] // v.shape[-3], dim=-3)
    return torch.softmax(_scores(q, k, mask, is_causal, scale), -1) @ v


def _flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor = None,
           is_causal: bool = False, scale: float = None) -> tuple:
    s = _scores(q, k, mask, is_causal, scale)
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1).detach()


def _flash_backward(g: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    out: torch.Tensor, lse: torch.Tensor, mask: torch.Tensor = None,
                    is_causal: bool = False, scale: float = None) -> tuple:
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    return torch.autograd.grad(_flash(*leaves, mask, is_causal, scale)[0], leaves, g)


def _backward_args(shapes: List[tuple], dtype: torch.dtype = torch.float32,
                   mask: Any = None, **kw: Any) -> list:
    """flash_attention_backward's inputs consistent with its forward (out, lse)."""
    q, k, v = (R(*s, seed=i, dtype=dtype) for i, s in enumerate(shapes))
    out, lse = _flash(q, k, v, mask, **kw)
    g = R(*out.shape, seed=5, dtype=dtype)
    return [g, q, k, v, out.detach(), lse] + ([mask] if mask is not None else [])


def attention_cases() -> List[Case]:
    f64 = torch.float64
    return [
        Case("scaled_dot_product_attention", [R(2, 3, 5, 4), R(2, 3, 7, 4), R(2, 3, 7, 6)],
             ref=_sdpa, rtol=1e-5),
        Case("scaled_dot_product_attention", [R(2, 9, 4, dtype=f64), R(2, 5, 4, dtype=f64),
                                              R(2, 5, 3, dtype=f64)],
             {"is_causal": True}, ref=_sdpa),
        Case("scaled_dot_product_attention", [NC(R(5, 4)), R(3, 7, 4), R(1, 7, 2), _keep(3, 5, 7)],
             {"scale": 0.3}, ref=_sdpa, rtol=1e-5),
        # A float mask: its own gradient (the composite's composed path).
        Case("scaled_dot_product_attention", [R(2, 5, 4), R(2, 7, 4), R(2, 7, 3), R(5, 7, seed=4)],
             ref=_sdpa, rtol=1e-5),
        Case("scaled_dot_product_attention", [R(2, 4, 5, 4), R(2, 2, 7, 4), R(2, 2, 7, 3)],
             {"enable_gqa": True}, ref=_sdpa, rtol=1e-5),
        Case("scaled_dot_product_flash_attention", [R(2, 5, 4), R(2, 7, 4), R(2, 7, 6)],
             ref=_flash, nout=2, rtol=1e-5),
        Case("scaled_dot_product_flash_attention",
             [R(6, 4, dtype=f64), R(1, 9, 4, dtype=f64), R(9, 2, dtype=f64), _keep(6, 9)],
             ref=_flash, nout=2),
        Case("scaled_dot_product_flash_attention", [R(2, 6, 3), R(2, 4, 3), R(2, 4, 3)],
             {"is_causal": True, "scale": 0.5}, ref=_flash, nout=2, rtol=1e-5),
        Case("scaled_dot_product_flash_attention_backward",
             _backward_args([(2, 5, 4), (2, 7, 4), (2, 7, 6)]), ref=_flash_backward, nout=3,
             rtol=1e-4),
        Case("scaled_dot_product_flash_attention_backward",
             _backward_args([(3, 6, 4), (3, 4, 4), (3, 4, 2)], f64, is_causal=True),
             {"is_causal": True}, ref=_flash_backward, nout=3),
        Case("scaled_dot_product_flash_attention_backward",
             _backward_args([(5, 4), (7, 4), (7, 3)], f64, mask=R(5, 7, seed=6, dtype=f64)),
             ref=_flash_backward, nout=3),
    ]


# The fused rows have no CUDA kernel (KnownCpuOnly of runtime/ops/known_cpu_only.cc).
CPU_ONLY = {"scaled_dot_product_flash_attention", "scaled_dot_product_flash_attention_backward"}
