"""``F.interpolate(mode="bilinear", antialias=True)`` on the daemon's rows of the same names as
ATen's ops: ``_upsample_bilinear2d_aa`` and its backward (runtime/ops/upsample_aa_ops.cc; the
``.vec`` overload is PyTorch's composite, which calls ``.default``). PyTorch's autograd calls
the backward row for the forward's gradient. The rows are CPU-only, float32/float64: on a CUDA
daemon, and in other dtypes (uint8 images, where PyTorch has its own fixed-point kernel), a rule
declines and PyTorch's CPU kernel runs (a counted fallback)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

from ._aten_map import c, rule
from ._aten_map_nn import _fused_rows

aten = torch.ops.aten
_FLOATS = ("float32", "float64")


def _native(*tensors: Any) -> bool:
    return all(t.dtype.name in _FLOATS for t in tensors if t is not None) and _fused_rows()


def _scales(scales_h: Optional[float], scales_w: Optional[float]) -> dict:
    return dict(scales_h=None if scales_h is None else float(scales_h),
                scales_w=None if scales_w is None else float(scales_w))


@rule(aten._upsample_bilinear2d_aa.default)
def _upsample_bilinear2d_aa(self: Any, output_size: Sequence[int], align_corners: bool,
                            scales_h: Optional[float] = None,
                            scales_w: Optional[float] = None) -> Any:
    if not _native(self):
        return NotImplemented
    return c("_upsample_bilinear2d_aa", [self], output_size=[int(s) for s in output_size],
             align_corners=bool(align_corners), **_scales(scales_h, scales_w))


@rule(aten._upsample_bilinear2d_aa_backward.default)
def _upsample_bilinear2d_aa_backward(grad_output: Any, output_size: Sequence[int],
                                     input_size: Sequence[int], align_corners: bool,
                                     scales_h: Optional[float] = None,
                                     scales_w: Optional[float] = None) -> Any:
    if not _native(grad_output):
        return NotImplemented
    return c("_upsample_bilinear2d_aa_backward", [grad_output],
             output_size=[int(s) for s in output_size],
             input_size=[int(s) for s in input_size], align_corners=bool(align_corners),
             **_scales(scales_h, scales_w))
