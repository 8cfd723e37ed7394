"""ATen's pairwise distances and histc mapped onto the daemon's distance rows
(runtime/ops/distance_ops.cc; ``_aten_map``'s conventions): ``_cdist_forward`` and
``_pdist_forward`` with the backward ops PyTorch's autograd calls for them, and ``histc``."""

from __future__ import annotations

from typing import Any, Optional

import torch

from ._aten_map import c, rule

aten = torch.ops.aten


@rule(aten._cdist_forward.default)
def _cdist_forward(x1: Any, x2: Any, p: float, compute_mode: Optional[int] = None) -> Any:
    """Every compute_mode gives the direct distances (PyTorch's matmul form differs only in
    rounding)."""
    return c("cdist", [x1, x2], p=float(p))


@rule(aten._cdist_backward.default)
def _cdist_backward(grad_output: Any, x1: Any, x2: Any, p: float, cdist: Any) -> Any:
    return c("_cdist_backward", [grad_output, x1, x2, cdist], p=float(p))


@rule(aten._pdist_forward.default)
def _pdist_forward(self: Any, p: float = 2.0) -> Any:
    return c("pdist", [self], p=float(p))


@rule(aten._pdist_backward.default)
def _pdist_backward(grad_output: Any, self: Any, p: float, pdist: Any) -> Any:
    return c("_pdist_backward", [grad_output, self, pdist], p=float(p))


@rule(aten.histc.default)
def _histc(self: Any, bins: int = 100, min: Any = 0, max: Any = 0) -> Any:  # noqa: A002
    return c("histc", [self], bins=int(bins), min=float(min), max=float(max))
