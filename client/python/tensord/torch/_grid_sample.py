"""The grid samplers as the daemon's rows of the same names: ``grid_sampler_2d_backward``
(runtime/ops/grid_sample_ops.cc: bilinear, nearest and bicubic interpolation; zeros, border and
reflection padding; PyTorch's enum values pass through), and ``grid_sampler_3d`` with its
backward (runtime/ops/grid_sample_3d_ops.cc: bilinear and nearest, as PyTorch has in 3-d).
``grid_sampler_2d`` itself runs as PyTorch's decomposition on the device's ops, and its autograd
formula calls the 2-d backward, so ``F.grid_sample`` trains on the daemon for images and
volumes."""

from __future__ import annotations

from typing import Any

import torch

from ._aten_map import c, rule

aten = torch.ops.aten


def _backward(name: str, grad_output: Any, input: Any, grid: Any,  # noqa: A002
              interpolation_mode: int, padding_mode: int, align_corners: bool,
              output_mask: Any) -> Any:
    """(grad_input or None where ``output_mask[0]`` is false, grad_grid), as ATen returns."""
    mask = [int(bool(m)) for m in output_mask]
    gi, gg = c(name, [grad_output, input, grid], interpolation_mode=int(interpolation_mode),
               padding_mode=int(padding_mode), align_corners=bool(align_corners),
               output_mask=mask)
    return (gi if mask[0] else None), gg


@rule(aten.grid_sampler_2d_backward.default)
def _grid_sampler_2d_backward(*args: Any) -> Any:
    return _backward("grid_sampler_2d_backward", *args)


@rule(aten.grid_sampler_3d_backward.default)
def _grid_sampler_3d_backward(*args: Any) -> Any:
    return _backward("grid_sampler_3d_backward", *args)


@rule(aten.grid_sampler_3d.default)
def _grid_sampler_3d(input: Any, grid: Any, interpolation_mode: int,  # noqa: A002
                     padding_mode: int, align_corners: bool) -> Any:
    return c("grid_sampler_3d", [input, grid], interpolation_mode=int(interpolation_mode),
             padding_mode=int(padding_mode), align_corners=bool(align_corners))
