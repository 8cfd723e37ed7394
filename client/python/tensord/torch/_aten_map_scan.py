"""ATen's cummax/cummin, logcumsumexp, mode and searchsorted mapped onto the daemon's rows of
the same names (runtime/ops/scan_ops.cc; ``_aten_map``'s conventions).

Their backward passes need no rule of their own: PyTorch's formulas (``cummaxmin_backward``,
``logcumsumexp_backward``, ``value_selecting_reduction_backward``) are compositions of ops the
table maps (``scatter_add``, ``flip``, ``logcumsumexp``, ``where``, ...). ``isin`` reaches the
daemon through its PyTorch decomposition (``sort`` and ``searchsorted``).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from ._aten_map import c, rule

aten = torch.ops.aten


@rule(aten.cummax.default)
def _cummax(self: Any, dim: int) -> Any:
    return tuple(c("cummax", [self], dim=dim))


@rule(aten.cummin.default)
def _cummin(self: Any, dim: int) -> Any:
    return tuple(c("cummin", [self], dim=dim))


@rule(aten.logcumsumexp.default, aten._logcumsumexp.default)
def _logcumsumexp(self: Any, dim: int) -> Any:
    return c("logcumsumexp", [self], dim=dim)


@rule(aten.mode.default)
def _mode(self: Any, dim: int = -1, keepdim: bool = False) -> Any:
    return tuple(c("mode", [self], dim=dim, keepdim=keepdim))


@rule(aten.searchsorted.Tensor, aten.searchsorted.Scalar)
def _searchsorted(sorted_sequence: Any, self: Any, *, out_int32: bool = False,
                  right: bool = False, side: Optional[str] = None,
                  sorter: Optional[Any] = None) -> Any:
    """``self`` a tensor, or a number (the ``.Scalar`` overload: sent as a 0-d wrapped number,
    promoted as PyTorch's); ``sorter`` an int64 tensor of the boundaries' shape."""
    inputs = [sorted_sequence, self] + ([sorter] if sorter is not None else [])
    return c("searchsorted", inputs, out_int32=out_int32, right=right, side=side)
