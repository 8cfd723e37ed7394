"""ATen's and PyTorch's prims' math overloads mapped onto the daemon's catalog (the rest of
``_aten_map``'s table; same conventions): unary and binary maps, reductions that
``torch._refs`` writes in prims, scans."""

from __future__ import annotations

from typing import Any

import torch

from ._aten_map import c, rule, same_name

aten = torch.ops.aten
prims = torch.ops.prims

# prims the references decompose into (max/min over all elements, isclose: bitwise ops on
# bools; round(decimals=d): round of a scaled tensor).
for _n in ["bitwise_and", "bitwise_or", "bitwise_xor", "round"]:
    same_name(_n, getattr(prims, _n).default)


@rule(prims.prod.default)
def _prims_prod(inp: Any, dims: Any, *, output_dtype: Any = None) -> Any:
    return c("prod", [inp], dim=None if dims is None else list(dims), dtype=output_dtype)


@rule(aten.cumprod.default)
def _cumprod(self: Any, dim: int, *, dtype: Any = None) -> Any:
    return c("cumprod", [self], dim=dim, dtype=dtype)
