"""PyTorch's prims (``torch.ops.prims``: the primitives its reference decompositions,
``torch._refs``, are written in) mapped onto the daemon's catalog, so that an op decomposed on
the client still runs on the daemon (``_aten_map``'s conventions; the math prims with their ATen
twins are in ``_aten_map_math``)."""

from __future__ import annotations

from typing import Any

import torch

from ._aten_map import c, rule, same_name, torch_args

prims = torch.ops.prims

same_name("where", prims.where.default)


@rule(prims.convert_element_type.default)
def _convert(a: Any, dtype: Any) -> Any:
    return c("to", [a], dtype=dtype)


for _n in ["abs", "neg", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh",
           "erf", "sign", "floor", "ceil", "trunc", "reciprocal", "add", "sub", "mul", "maximum",
           "minimum", "eq", "ne", "lt", "le", "gt", "ge", "pow", "bitwise_not"]:
    if hasattr(prims, _n):
        same_name(_n, getattr(prims, _n).default)


@rule(prims.div.default)
@torch_args
def _prims_div(targs: tuple, a: Any, b: Any) -> Any:
    floating = all(not isinstance(t, torch.Tensor) or t.is_floating_point() for t in targs)
    return c("div", [a, b]) if floating else NotImplemented  # integers: prims.div truncates


@rule(prims.sum.default)
def _prims_sum(a: Any, dims: Any, *, output_dtype: Any = None) -> Any:
    return c("sum", [a], dim=list(dims), dtype=output_dtype)


@rule(prims.var.default)
def _prims_var(a: Any, dims: Any, correction: float, *, output_dtype: Any = None) -> Any:
    if output_dtype is not None:
        return NotImplemented
    return c("var", [a], dim=list(dims), correction=float(correction))


@rule(prims.squeeze.default)
def _prims_squeeze(a: Any, dimensions: Any) -> Any:
    for d in sorted(dimensions, reverse=True):
        a = c("squeeze", [a], dim=d)
    return a


@rule(prims.broadcast_in_dim.default)
@torch_args
def _broadcast_in_dim(targs: tuple, a: Any, shape: Any, broadcast_dimensions: Any) -> Any:
    sizes = targs[0].shape
    view = [sizes[broadcast_dimensions.index(i)] if i in broadcast_dimensions else 1
            for i in range(len(shape))]
    return c("expand", [c("view", [a], shape=view)], size=list(shape))
