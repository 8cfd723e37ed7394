"""ATen's indexing, nn and backward overloads mapped onto the daemon's catalog (the rest of
``_aten_map``'s table; same conventions)."""

from __future__ import annotations

from typing import Any

import torch

from ._aten_map import _slice, c, rule, same_name

aten = torch.ops.aten

@rule(aten.index_select.default)
def _index_select(self: Any, dim: int, index: Any) -> Any:
    return c("index_select", [self, index], dim=dim)


@rule(aten.scatter.src)
def _scatter(self: Any, dim: int, index: Any, src: Any) -> Any:
    return c("scatter", [self, index, src], dim=dim)


@rule(aten.scatter_add.default)
def _scatter_add(self: Any, dim: int, index: Any, src: Any) -> Any:
    return c("scatter_add", [self, index, src], dim=dim)


@rule(aten.gather.default)
def _gather(self: Any, dim: int, index: Any, sparse_grad: bool = False) -> Any:
    return c("gather", [self, index], dim=dim)


@rule(aten.embedding.default)
def _embedding(weight: Any, indices: Any, padding_idx: int = -1, scale_grad_by_freq: bool = False,
               sparse: bool = False) -> Any:
    return c("embedding", [indices, weight])


@rule(aten._softmax.default)
def _softmax(self: Any, dim: int, half_to_float: bool) -> Any:
    return c("softmax", [self], dim=dim)


@rule(aten._log_softmax.default)
def _log_softmax(self: Any, dim: int, half_to_float: bool) -> Any:
    return c("log_softmax", [self], dim=dim)


@rule(aten.scatter.value)
def _scatter_value(self: Any, dim: int, index: Any, value: Any) -> Any:
    src = c("full", [], shape=list(index.shape), fill_value=float(value), dtype=self.dtype)
    return c("scatter", [self, index, src], dim=dim)


_REDUCTIONS = ("none", "mean", "sum")  # ATen's Reduction enum, by value


@rule(aten.nll_loss_forward.default)
def _nll_loss_forward(self: Any, target: Any, weight: Any, reduction: int,
                      ignore_index: int) -> Any:
    """The daemon's nll_loss, and the total weight ATen's backward divides by: the weights
    (or ones) of the targets that are not ``ignore_index``, summed."""
    ins = [self, target] + ([weight] if weight is not None else [])
    out = c("nll_loss", ins, reduction=_REDUCTIONS[reduction], ignore_index=ignore_index)
    kept = c("ne", [target, ignore_index])
    if weight is None:
        w = c("to", [kept], dtype=self.dtype)
    else:
        safe = c("where", [kept, target, 0])
        w = c("mul", [c("index_select", [weight, safe], dim=0), kept])
    return out, c("sum", [w])


@rule(aten.native_layer_norm.default)
def _native_layer_norm(input: Any, normalized_shape: Any, weight: Any, bias: Any,  # noqa: A002
                       eps: float) -> Any:
    """The daemon's layer_norm, plus the mean and 1/std ATen's backward reads (keepdim)."""
    ins = [input] + [t for t in (weight, bias) if t is not None]
    if weight is None and bias is not None:
        return NotImplemented
    out = c("layer_norm", ins, normalized_shape=list(normalized_shape), eps=float(eps))
    n = len(input.shape)
    dims = list(range(n - len(normalized_shape), n))
    mean = c("mean", [input], dim=dims, keepdim=True)
    var = c("var", [input], dim=dims, keepdim=True, correction=0.0)
    return out, mean, c("rsqrt", [c("add", [var, float(eps)])])


# prims that PyTorch's reference decompositions (torch._refs) emit
same_name("where", torch.ops.prims.where.default)


@rule(torch.ops.prims.convert_element_type.default)
def _convert(a: Any, dtype: Any) -> Any:
    return c("to", [a], dtype=dtype)


# Backward of views: zeros of the input's shape with the gradient copied into the same view.
@rule(aten.slice_backward.default)
def _slice_backward(grad_output: Any, input_sizes: Any, dim: int, start: int, end: int,
                    step: int) -> Any:
    z = c("zeros", [], shape=list(input_sizes), dtype=grad_output.dtype)
    c("copy_", [_slice(z, dim, start, end, step), grad_output])
    return z


@rule(aten.select_backward.default)
def _select_backward(grad_output: Any, input_sizes: Any, dim: int, index: int) -> Any:
    z = c("zeros", [], shape=list(input_sizes), dtype=grad_output.dtype)
    c("copy_", [c("select", [z], dim=dim, index=index), grad_output])
    return z
