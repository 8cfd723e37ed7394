"""PyTorch signatures for catalog ops that the generic mapping cannot express.

- Ops whose number of outputs depends on their arguments (``max``/``min`` over a dim,
  ``split``, ``chunk``, ``unbind``): the count is computed here from the input's shape (from its
  Ack), so callers never pass ``_num_outputs=``.
- Ops where PyTorch puts an attribute between tensor inputs (``gather(input, dim, index)``,
  ``scatter(input, dim, index, src)``, ``index_select``) or orders inputs differently from the
  daemon (``batch_norm``, ``embedding``'s functional form).

Each is a module-level function (``tensord.max``) and, through ``TensorMethods``, a method.
"""

from __future__ import annotations

import operator
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _tensor
from ._tensor import Tensor, call

__all__ = ["max", "min", "split", "chunk", "unbind", "gather", "scatter", "scatter_add",
           "scatter_reduce", "index_select", "layer_norm", "return_types"]


class _ValuesIndices(NamedTuple):
    values: Tensor
    indices: Tensor


class return_types:  # noqa: N801 (torch.return_types)
    """Named tuples returned by reductions over a dim, as ``torch.return_types``."""

    class max(_ValuesIndices):  # noqa: N801
        """``(values, indices)`` of ``max(input, dim)``."""

    class min(_ValuesIndices):  # noqa: N801
        """``(values, indices)`` of ``min(input, dim)``."""

    class cummax(_ValuesIndices):  # noqa: N801
        """``(values, indices)`` of ``cummax(input, dim)``."""

    class cummin(_ValuesIndices):  # noqa: N801
        """``(values, indices)`` of ``cummin(input, dim)``."""

    class mode(_ValuesIndices):  # noqa: N801
        """``(values, indices)`` of ``mode(input, dim, keepdim)``."""


def _minmax(name: str, input: Tensor, dim: Any, keepdim: bool, other: Any) -> Any:
    if isinstance(dim, Tensor):  # max(a, b): the elementwise form
        dim, other = None, dim
    if other is not None:
        if dim is not None:
            raise TypeError(f"{name}() takes either another tensor or a dim, not both")
        return call("maximum" if name == "max" else "minimum", [input, other])
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}(): keepdim needs a dim")
        return call(name, [input], num_outputs=1)
    values, indices = call(name, [input], {"dim": operator.index(dim), "keepdim": keepdim},
                           num_outputs=2)
    return getattr(return_types, name)(values, indices)


def max(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A001
        other: Optional[Tensor] = None) -> Any:
    """``max(input)``: the largest element; ``max(input, dim, keepdim=False)``: the named tuple
    ``(values, indices)``; ``max(input, other)``: the elementwise maximum."""
    return _minmax("max", input, dim, keepdim, other)


def min(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A001
        other: Optional[Tensor] = None) -> Any:
    """``min(input)``, ``min(input, dim, keepdim=False)`` → ``(values, indices)``,
    ``min(input, other)``: as ``max``."""
    return _minmax("min", input, dim, keepdim, other)


def _dim_size(t: Tensor, dim: int) -> Tuple[int, int]:
    shape = t.shape
    d = _tensor._wrap_dim(operator.index(dim), len(shape))
    if not shape:
        raise IndexError("the dim argument needs a tensor with at least one dimension")
    return d, shape[d]


def split(tensor: Tensor, split_size_or_sections: Union[int, Sequence[int]],
          dim: int = 0) -> Tuple[Tensor, ...]:
    """Views of pieces of ``dim``: of ``split_size`` each (the last may be smaller), or of the
    given ``sections`` sizes. Two or more sections make as many pieces whatever the shape: then
    a tensor whose shape the client has not yet is split without waiting for it, and the daemon
    checks the sizes (Note [Attention without shape waits] in nn/_functional_attention.py)."""
    if (tensor._info is None and not isinstance(split_size_or_sections, (int, np.integer))
            and len(split_size_or_sections) >= 2):
        arg = [operator.index(s) for s in split_size_or_sections]
        return call("split", [tensor], {"split_size_or_sections": arg,
                                        "dim": operator.index(dim)}, num_outputs=len(arg))
    d, size = _dim_size(tensor, dim)
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = operator.index(split_size_or_sections)
        if step < 0 or (step == 0 and size != 0):
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={step}")
        n = 1 if size == 0 else -(-size // step)
        arg = [step]
    else:
        arg = [operator.index(s) for s in split_size_or_sections]
        if sum(arg) != size or any(s < 0 for s in arg):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={arg}")
        n = len(arg)
        if n == 1:  # the daemon reads one value as a split size; it is the whole dim here
            arg = [size] if size else [0]
    out = call("split", [tensor], {"split_size_or_sections": arg, "dim": d}, num_outputs=n)
    return out if isinstance(out, tuple) else (out,)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> Tuple[Tensor, ...]:
    """Views of at most ``chunks`` equal pieces of ``dim`` (the last may be smaller)."""
    d, size = _dim_size(input, dim)
    chunks = operator.index(chunks)
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0")
    step = -(-size // chunks)
    n = chunks if step == 0 else -(-size // step)
    out = call("chunk", [input], {"chunks": chunks, "dim": d}, num_outputs=n)
    return out if isinstance(out, tuple) else (out,)


def unbind(input: Tensor, dim: int = 0) -> Tuple[Tensor, ...]:
    """Views of each slice along ``dim`` (that dim removed)."""
    d, size = _dim_size(input, dim)
    if size == 0:
        return ()
    out = call("unbind", [input], {"dim": d}, num_outputs=size)
    return out if isinstance(out, tuple) else (out,)


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` for ``dim == 0``, and so on."""
    return call("gather", [input, index], {"dim": dim})


def _src(input: Tensor, index: Tensor, src: Any, value: Any) -> Any:
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() needs src (a tensor) or value (a number)")
    if isinstance(src, Tensor):
        return src
    return _tensor.call("full_like", [index], {"fill_value": float(src), "dtype": input.dtype})


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *,
            value: Any = None) -> Tensor:
    """``input`` with ``src`` (a tensor, or a number) written at ``index`` along ``dim``."""
    return call("scatter", [input, index, _src(input, index, src, value)], {"dim": dim})


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``input`` with ``src`` added at ``index`` along ``dim``."""
    return call("scatter_add", [input, index, src], {"dim": dim})


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """``input`` with ``src`` reduced (``"sum"``, ``"prod"``, ``"mean"``, ``"amax"``,
    ``"amin"``) into the positions ``index`` names along ``dim``, as ``torch.scatter_reduce``;
    without ``include_self`` input's own value is left out of those positions."""
    return call("scatter_reduce", [input, index, src],
                {"dim": dim, "reduce": reduce, "include_self": include_self})


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Entries of ``input`` at ``index`` (1-d int64) along ``dim``."""
    return call("index_select", [input, index], {"dim": dim})


def layer_norm(input: Tensor, normalized_shape: Any, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Normalisation over the last ``len(normalized_shape)`` dims, then ``* weight + bias``."""
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = [normalized_shape]
    shape = [operator.index(s) for s in normalized_shape]
    ins: List[Any] = [input]
    if weight is not None or bias is not None:
        ins.append(weight if weight is not None else _tensor.call("ones_like", [bias]))
    if bias is not None:
        ins.append(bias)
    return call("layer_norm", ins, {"normalized_shape": shape, "eps": eps})


def daemon_checks_ranks(input: Tensor) -> bool:
    """Whether the daemon's ``batch_norm`` takes ``ranks`` (one built before it did not)."""
    op = input._session.catalog.get("batch_norm")
    return op is not None and "ranks" in op.by_name


def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5, *,
               _ranks: Sequence[int] = ()) -> Tensor:
    """``torch.nn.functional.batch_norm``: normalise over every dim but 1; in training, batch
    statistics are used and the running ones (when given) updated in place by the daemon.
    ``_ranks``: the input ranks a module accepts, checked by the daemon (BatchNorm2d: 4)."""
    if (running_mean is None) != (running_var is None):
        raise ValueError("batch_norm takes running_mean and running_var together")
    attrs: Dict[str, Any] = {"training": bool(training), "momentum": float(momentum),
                             "eps": float(eps)}
    if _ranks and daemon_checks_ranks(input):
        attrs["ranks"] = list(_ranks)
    if running_mean is None:
        if not training:
            raise ValueError("running_mean and running_var must be defined in evaluation mode")
        y = call("batch_norm", [input], attrs)
        c = input.shape[1]
        shape = [1, c] + [1] * (input.dim() - 2)
        if weight is not None:
            y = y * weight.reshape(shape)
        if bias is not None:
            y = y + bias.reshape(shape)
        return y
    ins: List[Any] = [input, running_mean, running_var]
    if weight is not None or bias is not None:
        ins.append(weight if weight is not None else _tensor.call("ones_like", [bias]))
    if bias is not None:
        ins.append(bias)
    return call("batch_norm", ins, attrs)
