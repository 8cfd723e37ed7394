"""ATen's indexing, nn and backward overloads mapped onto the daemon's catalog (the rest of
``_aten_map``'s table; same conventions)."""

from __future__ import annotations

from typing import Any

import torch

from . import _connection
from ._aten_map import _slice, c, rule, same_name, torch_args
from ._transfer import native_dtype

aten = torch.ops.aten


def _int64_index(targs: tuple, i: int, index: Any) -> Any:
    """PyTorch also takes int32 (and uint8) indices; the daemon's index kernels read int64."""
    return c("to", [index], dtype=native_dtype(torch.int64)) \
        if targs[i].dtype in (torch.int32, torch.int16, torch.int8, torch.uint8) else index


@rule(aten.embedding.default)
def _embedding(weight: Any, indices: Any, padding_idx: int = -1, scale_grad_by_freq: bool = False,
               sparse: bool = False) -> Any:
    return c("embedding", [weight, indices])


@rule(aten._softmax.default)
def _softmax(self: Any, dim: int, half_to_float: bool) -> Any:
    return c("softmax", [self], dim=dim)


@rule(aten._log_softmax.default)
def _log_softmax(self: Any, dim: int, half_to_float: bool) -> Any:
    return c("log_softmax", [self], dim=dim)


@rule(aten.scatter.value)
@torch_args
def _scatter_value(targs: tuple, self: Any, dim: int, index: Any, value: Any) -> Any:
    src = c("full", [], shape=list(targs[2].shape), fill_value=float(value),
            dtype=native_dtype(targs[0].dtype))
    return c("scatter", [self, _int64_index(targs, 2, index), src], dim=dim)


_REDUCTIONS = ("none", "mean", "sum")  # ATen's Reduction enum, by value


@rule(aten.nll_loss_forward.default)
@torch_args
def _nll_loss_forward(targs: tuple, self: Any, target: Any, weight: Any, reduction: int,
                      ignore_index: int) -> Any:
    """The daemon's nll_loss, and the total weight ATen's backward divides by: the weights
    (or ones) of the targets that are not ``ignore_index``, summed."""
    ins = [self, target] + ([weight] if weight is not None else [])
    out = c("nll_loss", ins, reduction=_REDUCTIONS[reduction], ignore_index=ignore_index)
    kept = c("ne", [target, ignore_index])
    if weight is None:
        w = c("to", [kept], dtype=native_dtype(targs[0].dtype))
    else:
        safe = c("where", [kept, target, 0])
        w = c("mul", [c("index_select", [weight, safe], dim=0), kept])
    return out, c("sum", [w])


def _fused_rows() -> bool:
    """Whether the device's daemon tensors are on the CPU, where the fused rows run
    (native_layer_norm(_backward), native_group_norm(_backward), gelu_backward,
    (log_)softmax_backward: CPU-only, CUDA keeps the composites)."""
    dev = _connection.daemon_device() or _connection.session().default_device
    return str(dev).startswith("cpu")


@rule(aten.native_layer_norm.default)
def _native_layer_norm(input: Any, normalized_shape: Any, weight: Any, bias: Any,  # noqa: A002
                       eps: float) -> Any:
    """The daemon's native_layer_norm on the CPU (output, mean and 1/std as ATen's, keepdim);
    elsewhere layer_norm plus the statistics."""
    if weight is None and bias is not None:
        return NotImplemented
    ins = [input] + [t for t in (weight, bias) if t is not None]
    if _fused_rows():
        return tuple(c("native_layer_norm", ins, normalized_shape=list(normalized_shape),
                       eps=float(eps)))
    out = c("layer_norm", ins, normalized_shape=list(normalized_shape), eps=float(eps))
    dims = list(range(-len(normalized_shape), 0))  # input.shape would wait for the daemon
    mean = c("mean", [input], dim=dims, keepdim=True)
    var = c("var", [input], dim=dims, keepdim=True, correction=0.0)
    return out, mean, c("rsqrt", [c("add", [var, float(eps)])])


@rule(aten.native_layer_norm_backward.default)
def _native_layer_norm_backward(grad_out: Any, input: Any, normalized_shape: Any,  # noqa: A002
                                mean: Any, rstd: Any, weight: Any, bias: Any,
                                output_mask: Any) -> Any:
    """The daemon's fused backward on the CPU (the statistics are native_layer_norm's)."""
    if not _fused_rows():
        return NotImplemented
    ins = [grad_out, input, mean, rstd] + ([weight] if weight is not None else [])
    gi, gw, gb = c("native_layer_norm_backward", ins, normalized_shape=list(normalized_shape))
    return (gi if output_mask[0] else None,
            gw if output_mask[1] and weight is not None else None,
            gb if output_mask[2] and bias is not None else None)


def _one_dtype(*ts: Any) -> bool:
    """Whether the given PyTorch tensors (None skipped) share one floating dtype, as the
    daemon's fused norm rows want their inputs."""
    dts = {t.dtype for t in ts if t is not None}
    return len(dts) == 1 and next(iter(dts)).is_floating_point


@rule(aten.native_group_norm.default)
@torch_args
def _native_group_norm(targs: tuple, input: Any, weight: Any, bias: Any,  # noqa: A002
                       N: int, C: int, HxW: int, group: int, eps: float) -> Any:  # noqa: N803
    """The daemon's fused native_group_norm on the CPU (output, and mean and 1/std [N, group]
    as ATen's); elsewhere, with a bias alone or mixed dtypes, ATen's decomposition."""
    if not _fused_rows() or (weight is None and bias is not None) or \
            not _one_dtype(*targs[:3]):
        return NotImplemented
    ins = [input] + [t for t in (weight, bias) if t is not None]
    return tuple(c("native_group_norm", ins, N=int(N), C=int(C), HxW=int(HxW), group=int(group),
                   eps=float(eps)))


@rule(aten.native_group_norm_backward.default)
@torch_args
def _native_group_norm_backward(targs: tuple, grad_out: Any, input: Any,  # noqa: A002
                                mean: Any, rstd: Any, weight: Any, N: int, C: int,  # noqa: N803
                                HxW: int, group: int, output_mask: Any) -> Any:  # noqa: N803
    """The daemon's fused backward on the CPU; the gradients output_mask leaves out are
    None, as ATen's."""
    if not _fused_rows() or not _one_dtype(*targs[:5]):
        return NotImplemented
    ins = [grad_out, input, mean, rstd] + ([weight] if weight is not None else [])
    mask = [1 if m else 0 for m in output_mask]
    out = c("native_group_norm_backward", ins, N=int(N), C=int(C), HxW=int(HxW),
            group=int(group), output_mask=mask)
    return tuple(o if m else None for o, m in zip(out, mask))


@rule(aten.gelu_backward.default)
def _gelu_backward(grad_output: Any, self: Any, approximate: str = "none") -> Any:
    if not _fused_rows():
        return NotImplemented
    return c("gelu_backward", [grad_output, self], approximate=approximate)


@rule(aten._softmax_backward_data.default)
@torch_args
def _softmax_backward_data(targs: tuple, grad_output: Any, output: Any, dim: int,
                           input_dtype: Any) -> Any:
    """The daemon's fused softmax_backward on the CPU; elsewhere ATen's decomposition."""
    if not _fused_rows():
        return NotImplemented
    g = c("softmax_backward", [grad_output, output], dim=dim)
    if targs[0].dtype != targs[3]:  # a half input's softmax computed in float
        g = c("to", [g], dtype=input_dtype)
    return g


@rule(aten._log_softmax_backward_data.default)
@torch_args
def _log_softmax_backward_data(targs: tuple, grad_output: Any, output: Any, dim: int,
                               input_dtype: Any) -> Any:
    """grad - exp(output) * sum(grad, dim) in the input's dtype: the daemon's fused
    log_softmax_backward on the CPU, four daemon rows elsewhere (no decomposition on the
    client)."""
    if _fused_rows():
        g = c("log_softmax_backward", [grad_output, output], dim=dim)
    else:
        s = c("sum", [grad_output], dim=[dim], keepdim=True)
        g = c("sub", [grad_output, c("mul", [c("exp", [output]), s])])
    if targs[0].dtype != targs[3]:  # a half input's log_softmax computed in float
        g = c("to", [g], dtype=input_dtype)  # (a native dtype here, targs[3] PyTorch's)
    return g


# Backward of views: zeros of the input's shape with the gradient copied into the same view.
@rule(aten.slice_backward.default)
@torch_args
def _slice_backward(targs: tuple, grad_output: Any, input_sizes: Any, dim: int, start: int,
                    end: int, step: int) -> Any:
    z = c("zeros", [], shape=list(input_sizes), dtype=native_dtype(targs[0].dtype))
    c("copy_", [_slice(z, dim, start, end, step), grad_output])
    return z


@rule(aten.select_backward.default)
@torch_args
def _select_backward(targs: tuple, grad_output: Any, input_sizes: Any, dim: int,
                     index: int) -> Any:
    z = c("zeros", [], shape=list(input_sizes), dtype=native_dtype(targs[0].dtype))
    c("copy_", [c("select", [z], dim=dim, index=index), grad_output])
    return z


@rule(aten.embedding_dense_backward.default)
@torch_args
def _embedding_dense_backward(targs: tuple, grad_output: Any, indices: Any, num_weights: int,
                              padding_idx: int, scale_grad_by_freq: bool) -> Any:
    """Rows of the gradient summed into a zero weight gradient (scatter_add along dim 0)."""
    if scale_grad_by_freq:
        return NotImplemented
    d = targs[0].shape[-1]
    grad = c("reshape", [grad_output], shape=[-1, d])
    idx = c("reshape", [indices], shape=[-1, 1])
    if padding_idx >= 0:
        grad = c("masked_fill", [grad, c("eq", [idx, padding_idx]), 0.0])
    idx = c("expand", [idx], size=[-1, d])
    z = c("zeros", [], shape=[num_weights, d], dtype=native_dtype(targs[0].dtype))
    return c("scatter_add", [z, idx, grad], dim=0)


# ---------------------------------------------------------------- splits (views of one input)
def _pieces(x: Any, dim: int, sizes: Any) -> list:
    out, start = [], 0
    for n in sizes:
        out.append(_slice(x, dim, start, start + n, 1))
        start += n
    return out


@rule(aten.split.Tensor)
@torch_args
def _split(targs: tuple, self: Any, split_size: int, dim: int = 0) -> Any:
    total = targs[0].shape[dim]
    n = max(split_size, 1)
    return _pieces(self, dim, [min(n, total - s) for s in range(0, total, n)] or [0])


@rule(aten.split_with_sizes.default)
def _split_with_sizes(self: Any, split_sizes: Any, dim: int = 0) -> Any:
    return _pieces(self, dim, list(split_sizes))


@rule(aten.unbind.int)
@torch_args
def _unbind(targs: tuple, self: Any, dim: int = 0) -> Any:
    return [c("select", [self], dim=dim, index=i) for i in range(targs[0].shape[dim])]


# ---------------------------------------------------------------- adaptive avg pooling, index_add
@rule(aten._adaptive_avg_pool2d.default)
def _adaptive_avg_pool2d(self: Any, output_size: Any) -> Any:
    return c("adaptive_avg_pool2d", [self], output_size=list(output_size))


same_name("adaptive_avg_pool2d_backward", aten._adaptive_avg_pool2d_backward.default)


@rule(aten.index_add.default)
@torch_args
def _index_add(targs: tuple, self: Any, dim: int, index: Any, source: Any, *,
               alpha: Any = 1) -> Any:
    """scatter_add with the index laid along ``dim`` and broadcast to the source's shape."""
    shape = list(targs[3].shape)
    if not shape:
        return NotImplemented
    d = dim % len(shape)
    lay = [1] * len(shape)
    lay[d] = -1
    idx = c("expand", [c("view", [index], shape=lay)], size=shape)
    if alpha != 1:
        source = c("mul", [source, alpha])
    return c("scatter_add", [self, idx, source], dim=d)


# ---------------------------------------------------------------- selections, losses, randperm
@rule(aten.tril.default)
def _tril(self: Any, diagonal: int = 0) -> Any:
    return c("tril", [self], diagonal=diagonal)


@rule(aten.triu.default)
def _triu(self: Any, diagonal: int = 0) -> Any:
    return c("triu", [self], diagonal=diagonal)


@rule(aten.roll.default)
def _roll(self: Any, shifts: Any, dims: Any = ()) -> Any:
    return c("roll", [self], shifts=list(shifts), dims=list(dims))


@rule(aten.leaky_relu.default)
def _leaky_relu(self: Any, negative_slope: Any = 0.01) -> Any:
    return c("leaky_relu", [self], negative_slope=float(negative_slope))


same_name("clamp_min", aten.clamp_min.Tensor)
same_name("clamp_max", aten.clamp_max.Tensor)


@rule(aten.clamp.Tensor)
def _clamp_tensor(self: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    out = c("clamp_min", [self, min]) if min is not None else self
    return c("clamp_max", [out, max]) if max is not None else out


@rule(aten.binary_cross_entropy.default)
def _bce(self: Any, target: Any, weight: Any = None, reduction: int = 1) -> Any:
    ins = [self, target] + ([weight] if weight is not None else [])
    return c("binary_cross_entropy", ins, reduction=_REDUCTIONS[reduction])


@rule(aten.binary_cross_entropy_with_logits.default)
def _bce_logits(self: Any, target: Any, weight: Any = None, pos_weight: Any = None,
                reduction: int = 1) -> Any:
    ins = [self, target] + [t for t in (weight, pos_weight) if t is not None]
    return c("binary_cross_entropy_with_logits", ins, reduction=_REDUCTIONS[reduction],
             has_pos_weight=pos_weight is not None)


@rule(aten.smooth_l1_loss.default)
def _smooth_l1(self: Any, target: Any, reduction: int = 1, beta: Any = 1.0) -> Any:
    return c("smooth_l1_loss", [self, target], reduction=_REDUCTIONS[reduction], beta=float(beta))


@rule(aten.huber_loss.default)
def _huber(self: Any, target: Any, reduction: int = 1, delta: Any = 1.0) -> Any:
    return c("huber_loss", [self, target], reduction=_REDUCTIONS[reduction], delta=float(delta))


@rule(aten.randperm.out, aten.randperm.generator_out)
def _randperm_out(n: int, *, generator: Any = None, out: Any) -> Any:
    """The permutation drawn by the daemon (its session generator) copied into ``out``."""
    if generator is not None:  # a torch.Generator's stream: PyTorch's own, on the CPU
        return NotImplemented
    return c("copy_", [out, c("randperm", [], n=n)])  # copy_ casts to out's dtype


@rule(aten.index_put.default)
@torch_args
def _index_put(targs: tuple, self: Any, indices: Any, values: Any,
               accumulate: bool = False) -> Any:
    """Item assignment with one index: a bool mask of the leading dims with values that
    broadcast to the other dims (``x[mask] = 0``), or a 1-d integer index along dim 0."""
    x, tindices, v = targs[0], targs[1], targs[2]
    if len(tindices) != 1 or tindices[0] is None:
        return NotImplemented
    idx = tindices[0]
    vdim = v.dim() if isinstance(v, torch.Tensor) else 0
    if idx.dtype == torch.bool:
        if vdim > x.dim() - idx.dim():
            return NotImplemented  # one value per selected element: needs nonzero
    elif idx.dtype not in (torch.int64, torch.int32) or idx.dim() != 1 or x.dim() == 0:
        return NotImplemented
    index = c("to", [indices[0]], dtype=native_dtype(torch.int64)) \
        if idx.dtype == torch.int32 else indices[0]
    return c("index_put", [self, values, index], accumulate=bool(accumulate))
