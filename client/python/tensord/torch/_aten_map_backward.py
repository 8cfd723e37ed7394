"""Backward ops of resampling and padding mapped onto the daemon's catalog (the rest of
``_aten_map``'s table; same conventions).

Note [Separable backward matrices]: nearest, (bi/tri)linear and bicubic upsampling and replicate
padding act on each spatial dim separately: out = M_d applied along dim d, for a small matrix M_d
(input size x output size) that depends only on the sizes, the scale and align_corners. The
gradient is then grad @ M_d^T along each dim, on the daemon (``matmul``). M_d is PyTorch's own
forward applied to an identity matrix on the client's CPU, in the gradient's dtype, so the source
indices and weights are PyTorch's exactly (float32 index rounding included). The cost is a GEMM
per dim instead of a scatter: fine for the sizes programs upsample, not a fused kernel.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import torch

from . import _connection, _transfer
from ._aten_map import c, rule, torch_args

aten = torch.ops.aten


def _nearest(exact: bool) -> Any:
    op = aten._upsample_nearest_exact1d if exact else aten.upsample_nearest1d
    return lambda eye, m, align, scale: op(eye, [m], scale)


def _linear(eye: torch.Tensor, m: int, align: bool, scale: Optional[float]) -> torch.Tensor:
    return aten.upsample_linear1d(eye, [m], align, scale)


def _bicubic(eye: torch.Tensor, m: int, align: bool, scale: Optional[float]) -> torch.Tensor:
    return aten.upsample_bicubic2d(eye.unsqueeze(-1), [m, 1], align, scale, None).squeeze(-1)


def _apply_transposed(grad: Any, shape: Sequence[int], dtype: torch.dtype,
                      mats: List[torch.Tensor]) -> Any:
    """grad (N, C, *out) of ``shape`` contracted along each of its last len(mats) dims with
    mats[d] (in_d x out_d): one 2-d GEMM per dim on the daemon (Note [Separable backward
    matrices])."""
    s = _connection.session()
    k = len(mats)
    shape = list(shape)
    for i, m in enumerate(mats):
        dim = len(shape) - k + i
        mt = _transfer.upload(s, m.t().contiguous().to(dtype))
        g = c("transpose", [grad], dim0=dim, dim1=-1)
        moved = shape[:dim] + shape[dim + 1:] + [shape[dim]]
        g = c("matmul", [c("reshape", [g], shape=[-1, shape[dim]]), mt])
        shape[dim] = m.shape[0]
        g = c("reshape", [g], shape=moved[:-1] + [shape[dim]])
        grad = c("transpose", [g], dim0=dim, dim1=-1)
    return c("contiguous", [grad])


def _upsample_backward(kind: Any, has_align: bool) -> Any:
    @torch_args
    def fn(targs: tuple, grad: Any, output_size: Sequence[int], input_size: Sequence[int],
           *rest: Any) -> Any:
        align = bool(rest[0]) if has_align else False
        scales = list(rest[1:] if has_align else rest)
        k = len(output_size)
        scales += [None] * (k - len(scales))
        dtype = targs[0].dtype
        mats = []
        for n, m, scale in zip(input_size[-k:], output_size, scales):
            eye = torch.eye(n, dtype=dtype).unsqueeze(0)  # (1, n, n): n channels of length n
            mats.append(kind(eye, m, align, scale)[0])     # (n, m)
        return _apply_transposed(grad, targs[0].shape, dtype, mats)
    return fn


for _d in (1, 2, 3):
    rule(getattr(aten, f"upsample_nearest{_d}d_backward").default)(
        _upsample_backward(_nearest(False), False))
    rule(getattr(aten, f"_upsample_nearest_exact{_d}d_backward").default)(
        _upsample_backward(_nearest(True), False))
rule(aten.upsample_linear1d_backward.default, aten.upsample_bilinear2d_backward.default,
     aten.upsample_trilinear3d_backward.default)(_upsample_backward(_linear, True))
rule(aten.upsample_bicubic2d_backward.default)(_upsample_backward(_bicubic, True))


@rule(aten.replication_pad1d_backward.default, aten.replication_pad2d_backward.default,
      aten.replication_pad3d_backward.default)
@torch_args
def _replication_pad_backward(targs: tuple, grad: Any, self: Any, padding: Sequence[int]) -> Any:
    """padding lists (left, right) of the last dim first, as F.pad; negative pads crop."""
    k = len(padding) // 2
    mats = []
    for d in range(k):  # d: the d-th spatial dim from the front
        left, right = padding[2 * (k - 1 - d)], padding[2 * (k - 1 - d) + 1]
        n = targs[1].shape[-k + d]
        m = n + left + right
        src = (torch.arange(m) - left).clamp(0, n - 1)
        mat = torch.zeros(n, m, dtype=targs[0].dtype)
        mat[src, torch.arange(m)] = 1
        mats.append(mat)
    return _apply_transposed(grad, targs[0].shape, targs[0].dtype, mats)


@rule(aten.hardshrink_backward.default, aten.softshrink_backward.default)
def _shrink_backward(grad: Any, self: Any, lambd: Any) -> Any:
    """grad where |self| > lambd, else 0 (both shrinks: PyTorch's formula)."""
    kept = c("gt", [c("abs", [self]), lambd])
    return c("where", [kept, grad, 0.0])
