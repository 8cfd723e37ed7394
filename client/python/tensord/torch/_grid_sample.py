"""``grid_sampler_2d_backward`` as the daemon's row of the same name (runtime/ops/
grid_sample_ops.cc: bilinear, nearest and bicubic interpolation; zeros, border and reflection
padding; PyTorch's enum values pass through). ``grid_sampler_2d`` itself runs as PyTorch's
decomposition on the device's ops, and its autograd formula calls this backward, so
``F.grid_sample`` trains on the daemon."""

from __future__ import annotations

from typing import Any

import torch

from ._aten_map import c, rule

aten = torch.ops.aten


@rule(aten.grid_sampler_2d_backward.default)
def _grid_sampler_2d_backward(grad_output: Any, input: Any, grid: Any,  # noqa: A002
                              interpolation_mode: int, padding_mode: int, align_corners: bool,
                              output_mask: Any) -> Any:
    """(grad_input or None where ``output_mask[0]`` is false, grad_grid), as ATen returns."""
    mask = [int(bool(m)) for m in output_mask]
    gi, gg = c("grid_sampler_2d_backward", [grad_output, input, grid],
               interpolation_mode=int(interpolation_mode), padding_mode=int(padding_mode),
               align_corners=bool(align_corners), output_mask=mask)
    return (gi if mask[0] else None), gg
