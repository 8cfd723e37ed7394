"""Functional neural-network ops, as ``torch.nn.functional``, over the daemon's NN ops.

Signatures are PyTorch's; each maps onto one catalog op where the daemon has it (``linear``,
``conv2d``, pooling, ``softmax``, ``dropout``, losses, norms, ``embedding``,
``embedding_bag``) or composes a few.
The 1-d and transposed convolutions live in ``_functional_conv``, the newer losses in
``_functional_loss``, ``embedding_bag`` in ``_functional_sparse``, ``ctc_loss`` and
``grid_sample`` in ``_functional_sample``, attention in ``_functional_attention``; all are
imported here.
Every other catalog op is reachable by name too (``F.<op>(...)``), with its attributes as
keyword arguments.
"""

from __future__ import annotations

import math
import operator
from typing import Any, List, Optional, Sequence, Union

from .. import _context, _tensor
from .._multi_ops import batch_norm, layer_norm  # noqa: F401 (PyTorch's F names)
from .._catalog_function import CatalogFunction
from .._tensor import Tensor, call
from ._functional_attention import scaled_dot_product_attention  # noqa: F401
from ._functional_conv import (conv1d, conv_transpose1d, conv_transpose2d,  # noqa: F401
                               same_padding)
from ._functional_sample import ctc_loss, grid_sample  # noqa: F401
from ._functional_sparse import embedding_bag  # noqa: F401
from ._functional_loss import (binary_cross_entropy, huber_loss, kl_div,  # noqa: F401
                               multi_margin_loss, multilabel_margin_loss, smooth_l1_loss)

_IntOrPair = Union[int, Sequence[int]]


def _pair(v: _IntOrPair, name: str) -> List[int]:
    if isinstance(v, (list, tuple)):
        out = [operator.index(x) for x in v]
        if len(out) == 1:
            out = out * 2
        if len(out) != 2:
            raise ValueError(f"{name} must be an int or a pair of ints, got {v!r}")
        return out
    return [operator.index(v)] * 2


def _reduction(reduction: str, size_average: Any = None, reduce: Any = None) -> str:
    if size_average is not None or reduce is not None:  # PyTorch's legacy arguments
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


# ----------------------------------------------------------------- activations

def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)`` elementwise."""
    if inplace:
        call("relu_", [input], why="relu(inplace=True)")
        return input
    return call("relu", [input])


def relu_(input: Tensor) -> Tensor:
    """``relu`` in place."""
    return relu(input, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: exact (erf) or ``approximate='tanh'``."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate argument must be either none or tanh, got {approximate}")
    return call("gelu", [input], {"approximate": approximate})


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * sigmoid(input)``."""
    return call("silu", [input])


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-input))``."""
    return call("sigmoid", [input])


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return call("tanh", [input])


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``input`` where positive, ``negative_slope * input`` elsewhere."""
    return call("where", [call("gt", [input, 0.0]), input, input * negative_slope])


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``clamp(input, min_val, max_val)``; on integer tensors the bounds are truncated to the
    input's dtype first (as PyTorch's hardtanh), so the result keeps it."""
    if not input.dtype.is_floating_point:
        min_val, max_val = math.trunc(min_val), math.trunc(max_val)
    return call("clamp", [input], {"min": min_val, "max": max_val})


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``clamp(input, 0, 6)``."""
    return hardtanh(input, 0.0, 6.0)


def softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """Softmax over ``dim``."""
    if dim is None:
        raise TypeError("softmax(): dim is required (PyTorch's implicit dim is deprecated)")
    return call("softmax", [input], {"dim": dim, "dtype": dtype})


def log_softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    """Log of softmax over ``dim``."""
    if dim is None:
        raise TypeError("log_softmax(): dim is required")
    return call("log_softmax", [input], {"dim": dim, "dtype": dtype})


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zeroes elements with probability ``p`` (the daemon's session generator) and scales the
    rest by ``1/(1-p)``; the identity unless ``training``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    return call("dropout", [input], {"p": float(p), "training": True})


# ------------------------------------------------------------ linear and conv

def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``input @ weight.T + bias``: ``weight`` is ``(out_features, in_features)``."""
    if "linear" in _tensor._session_of([input]).catalog:
        return call("linear", [input, weight] + ([bias] if bias is not None else []))
    out = call("matmul", [input, call("transpose", [weight], {"dim0": 0, "dim1": 1})])
    return out if bias is None else call("add", [out, bias])


def conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           stride: _IntOrPair = 1, padding: Union[str, _IntOrPair] = 0,
           dilation: _IntOrPair = 1, groups: int = 1) -> Tensor:
    """2-d convolution of NCHW ``input`` with ``(out, in/groups, kH, kW)`` ``weight``.
    ``padding`` may be ints, ``'valid'`` or ``'same'`` (stride 1)."""
    dil = _pair(dilation, "dilation")
    st = _pair(stride, "stride")
    if isinstance(padding, str):
        if padding == "valid":
            pad = [0, 0]
        elif padding == "same":
            input, pad = same_padding("conv2d", input, weight, st, dil)
        else:
            raise ValueError(f"Invalid padding string '{padding}'")
    else:
        pad = _pair(padding, "padding")
    ins = [input, weight] + ([bias] if bias is not None else [])
    return call("conv2d", ins, {"stride": st, "padding": pad, "dilation": dil,
                                "groups": groups})


def max_pool2d(input: Tensor, kernel_size: _IntOrPair, stride: Optional[_IntOrPair] = None,
               padding: _IntOrPair = 0, dilation: _IntOrPair = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """2-d max pooling (``stride`` defaults to ``kernel_size``); with ``return_indices``,
    ``(values, indices)``: each maximum's int64 index into its input plane, as PyTorch's."""
    return call("max_pool2d_with_indices" if return_indices else "max_pool2d", [input], {
        "kernel_size": _pair(kernel_size, "kernel_size"),
        "stride": _pair(stride, "stride") if stride is not None and stride != [] else [],
        "padding": _pair(padding, "padding"), "dilation": _pair(dilation, "dilation"),
        "ceil_mode": ceil_mode})


def avg_pool2d(input: Tensor, kernel_size: _IntOrPair, stride: Optional[_IntOrPair] = None,
               padding: _IntOrPair = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: Optional[int] = None
               ) -> Tensor:
    """2-d average pooling (``stride`` defaults to ``kernel_size``); ``divisor_override``
    (a non-zero int) divides every window's sum instead of its size."""
    if divisor_override == 0:
        raise ValueError("avg_pool2d: divisor must be not zero")
    attrs = {"kernel_size": _pair(kernel_size, "kernel_size"),
             "stride": _pair(stride, "stride") if stride is not None and stride != [] else [],
             "padding": _pair(padding, "padding"), "ceil_mode": ceil_mode,
             "count_include_pad": count_include_pad}
    if divisor_override is not None:
        attrs["divisor_override"] = int(divisor_override)
    return call("avg_pool2d", [input], attrs)


def adaptive_max_pool2d(input: Tensor, output_size: _IntOrPair,
                        return_indices: bool = False) -> Any:
    """Max pooling to an ``output_size`` grid (PyTorch's windows); with ``return_indices``,
    ``(values, indices)``: each maximum's int64 index into its input plane."""
    values, indices = call("adaptive_max_pool2d", [input],
                           {"output_size": _pair(output_size, "output_size")})
    return (values, indices) if return_indices else values


def adaptive_avg_pool2d(input: Tensor, output_size: _IntOrPair) -> Tensor:
    """Average pooling to an ``output_size`` grid."""
    return call("adaptive_avg_pool2d", [input], {"output_size": _pair(output_size,
                                                                      "output_size")})


def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None,
              max_norm: Optional[float] = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the int64 or int32 indices ``input`` (the daemon's op
    takes ``(weight, indices)``, like ``torch.embedding``). As PyTorch, the ``padding_idx``
    row gets no gradient and ``scale_grad_by_freq`` divides each row's gradient by how often
    its index occurs in ``input``."""
    if max_norm is not None or sparse:
        raise NotImplementedError("embedding(max_norm=, sparse=True) are not supported by the "
                                  "daemon")
    if padding_idx is None:
        padding_idx = -1
    else:
        rows = weight.shape[0]
        if not -rows <= padding_idx < rows:
            raise ValueError(f"embedding: padding_idx {padding_idx} must be within "
                             f"num_embeddings ({rows})")
        padding_idx = padding_idx % rows
    return call("embedding", [weight, input],
                {"padding_idx": padding_idx, "scale_grad_by_freq": bool(scale_grad_by_freq)})


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding of class indices (a new last dim of ``num_classes``)."""
    if num_classes < 0:
        num_classes = int(call("amax", [tensor]).item()) + 1
    s = tensor._session
    classes = call("arange", [], {"start": 0.0, "end": float(num_classes), "dtype": "int64",
                                  "device": tensor.device}, session=s)
    hot = call("eq", [call("unsqueeze", [tensor], {"dim": -1}), classes])
    return call("to", [hot], {"dtype": "int64"})


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Normalisation of ``(N, C, *)`` input over each group of ``C / num_groups`` channels
    (and all spatial positions), then ``* weight + bias`` per channel. On the CPU the daemon's
    fused ``native_group_norm`` row (one kernel forward, one backward); elsewhere its
    ``layer_norm`` over the last dim of an ``(N, num_groups, -1)`` view."""
    shape = list(input.shape)
    if len(shape) < 2:
        raise RuntimeError(f"group_norm: expected input of at least 2 dims (N, C, *), but got "
                           f"input of shape {shape}")
    if num_groups <= 0 or shape[1] % num_groups:
        raise RuntimeError(f"group_norm: expected the number of channels of input of shape "
                           f"{shape} to be divisible by num_groups={num_groups}")
    group_size = 1
    for s in shape[1:]:
        group_size *= s
    group_size //= num_groups
    if input.device.type == "cpu" and input.dtype.is_floating_point and all(
            t is None or t.dtype == input.dtype for t in (weight, bias)):
        ins: List[Any] = [input]
        if weight is not None or bias is not None:
            ins.append(weight if weight is not None else call("ones_like", [bias]))
        if bias is not None:
            ins.append(bias)
        hw = math.prod(shape[2:])
        return call("native_group_norm", ins,
                    {"N": shape[0], "C": shape[1], "HxW": hw, "group": num_groups,
                     "eps": float(eps)}, num_outputs=3)[0]
    y = call("reshape", [input], {"shape": [shape[0], num_groups, group_size]})
    y = layer_norm(y, [group_size], eps=eps)
    y = call("reshape", [y], {"shape": shape})
    per_channel = [shape[1]] + [1] * (len(shape) - 2)
    if weight is not None:
        y = y * call("reshape", [weight], {"shape": per_channel})
    if bias is not None:
        y = y + call("reshape", [bias], {"shape": per_channel})
    return y


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input / max(norm(input, p, dim), eps)``."""
    n = call("norm", [input], {"p": float(p), "dim": [dim], "keepdim": True})
    return input / call("clamp", [n], {"min": eps})


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``norm(x1 - x2 + eps, p)`` over the last dim."""
    return call("norm", [x1 - x2 + eps], {"p": float(p), "dim": [-1], "keepdim": keepdim})


# ----------------------------------------------------------------------- losses

def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    """Mean squared error."""
    return call("mse_loss", [input, target],
                {"reduction": _reduction(reduction, size_average, reduce)})


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean") -> Tensor:
    """Mean absolute error."""
    r = _reduction(reduction, size_average, reduce)
    d = call("abs", [input - target])
    return d if r == "none" else call(r, [d])


def nll_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
             size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class targets given log-probabilities ``[N, C, ...]``."""
    ins = [input, target] + ([weight] if weight is not None else [])
    return call("nll_loss", ins, {"reduction": _reduction(reduction, size_average, reduce),
                                  "ignore_index": ignore_index})


def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)``: class-index or probability targets,
    class weights, label smoothing."""
    ins = [input, target] + ([weight] if weight is not None else [])
    return call("cross_entropy", ins, {
        "reduction": _reduction(reduction, size_average, reduce), "ignore_index": ignore_index,
        "label_smoothing": float(label_smoothing)})


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Optional[Tensor] = None, size_average: Any = None,
                                     reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Optional[Tensor] = None) -> Tensor:
    """``max(x, 0) - x * t + log(1 + exp(-|x|))``, composed of pointwise ops."""
    r = _reduction(reduction, size_average, reduce)
    neg_abs = call("neg", [call("abs", [input])])
    log_term = call("log1p", [call("exp", [neg_abs])])
    if pos_weight is not None:
        lw = (pos_weight - 1.0) * target + 1.0
        loss = (1.0 - target) * input + lw * (log_term + call("relu", [-input]))
    else:
        loss = call("relu", [input]) - input * target + log_term
    if weight is not None:
        loss = loss * weight
    return loss if r == "none" else call(r, [loss])


def __getattr__(name: str) -> Any:
    s = _context.current()
    if s is not None and name in s.catalog:
        return CatalogFunction(name)
    raise AttributeError(f"module 'tensord.nn.functional' has no attribute '{name}'"
                         + ("" if s is not None else " (catalog ops appear after connect())"))

