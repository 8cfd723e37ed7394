"""ATen overloads mapped straight onto the daemon's catalog: one small rule per op.

A rule receives the op's arguments with tensord tensors replaced by the native client's tensors
(``_dispatch.unwrap``) and returns the daemon results; it only queues commands. Output metadata
is not its business (``_meta``). What is not here goes to ``torch._decomp``'s decompositions,
then to the CPU fallback (``_dispatch.dispatch``): backward ops without a rule here run as
their decompositions. This module holds the table (``RULES``, ``rule``, ``torch_args``, ``c``)
and the core rows; other modules add theirs, and ``_aten_table`` imports them all.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import torch

from .._tensor import call as native_call
from .._site import site_field
from .._tensor import call_op, missing_op
from . import _connection
from ._op_table import OpTable

aten = torch.ops.aten
RULES = OpTable()
# While a rule is recorded (Note [Direct calls]), each call ``c`` makes is appended to the last
# list here: (session, op, inputs, attrs, result).
taps: List[List[tuple]] = []
_BIG = 1 << 62


def c(name: str, inputs: Sequence[Any], **attrs: Any) -> Any:
    """The daemon's op ``name`` on ``inputs``; attributes left None take its defaults."""
    s = _connection.session()
    op = s.catalog.get(name)
    if op is None:
        raise missing_op(name, s)
    # The call site: the program's line (PyTorch's own frames are library code: _registration);
    # inside a backward pass, where no program frame is on the stack, none.
    kept = {k: v for k, v in attrs.items() if v is not None} or None
    out = call_op(s, op, inputs, kept, site=site_field(1))
    if taps:  # a rule being recorded (Note [Direct calls])
        taps[-1].append((s, op, inputs, kept, out))
    return out


def rule(*ops: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for op in ops:
            RULES[op] = fn
        return fn
    return register


def torch_args(fn: Any) -> Any:
    """Marks a rule that also needs the op's PyTorch arguments (shapes, dtypes: what the
    native tensors would have to wait for); ``run_rule`` passes them first."""
    fn.torch_args = True
    return fn


def same_name(name: str, *ops: Any) -> None:
    """Ops whose tensor arguments and no others go to the daemon's op ``name``."""
    for op in ops:
        RULES[op] = lambda *a, _n=name, **k: c(_n, a)


# ---------------------------------------------------------------- pointwise
for _n in ["neg", "abs", "sign", "relu", "floor", "ceil", "trunc", "exp", "log", "log1p",
           "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "silu", "erf",
           "reciprocal", "bitwise_not", "logical_not"]:
    same_name(_n, getattr(aten, _n).default)
same_name("round", aten.round.default)
for _n in ["maximum", "minimum", "logical_and", "logical_or", "logical_xor"]:
    same_name(_n, getattr(aten, _n).default)
for _n in ["eq", "ne", "lt", "le", "gt", "ge", "remainder"]:
    same_name(_n, getattr(aten, _n).Tensor, getattr(aten, _n).Scalar)
same_name("floor_divide", aten.floor_divide.default, aten.floor_divide.Scalar)
same_name("maximum", aten.max.other)
same_name("minimum", aten.min.other)
same_name("pow", aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar)
same_name("where", aten.where.self)
same_name("masked_fill", aten.masked_fill.Scalar, aten.masked_fill.Tensor)
for _n in ["mul", "div"]:
    same_name(_n, getattr(aten, _n).Tensor, getattr(aten, _n).Scalar)


def _alpha_rule(name: str) -> Callable[..., Any]:
    def fn(self: Any, other: Any, alpha: Any = 1) -> Any:
        return c(name, [self, other], alpha=float(alpha) if alpha != 1 else None)
    return fn


for _op, _n in [(aten.add.Tensor, "add"), (aten.add.Scalar, "add"), (aten.sub.Tensor, "sub"),
                (aten.sub.Scalar, "sub"), (aten.add_.Tensor, "add_"), (aten.add_.Scalar, "add_"),
                (aten.sub_.Tensor, "sub_"), (aten.sub_.Scalar, "sub_")]:
    RULES[_op] = _alpha_rule(_n)
for _n in ["mul_", "div_"]:
    same_name(_n, getattr(aten, _n).Tensor, getattr(aten, _n).Scalar)
same_name("relu_", aten.relu_.default)


@rule(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(self: Any, other: Any, alpha: Any = 1) -> Any:
    if alpha != 1:
        self = c("mul", [self, alpha])
    return c("sub", [other, self])


@rule(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(self: Any, other: Any, rounding_mode: Optional[str] = None) -> Any:
    return c("div", [self, other], rounding_mode=rounding_mode)


@rule(aten.clamp.default)
def _clamp(self: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    return c("clamp", [self], min=min, max=max)


@rule(aten.clamp_.default)
def _clamp_(self: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    return c("clamp_", [self], min=min, max=max)


@rule(aten.clamp_min.default)
def _clamp_min(self: Any, min: Any) -> Any:  # noqa: A002
    return c("clamp", [self], min=min)


@rule(aten.clamp_max.default)
def _clamp_max(self: Any, max: Any) -> Any:  # noqa: A002
    return c("clamp", [self], max=max)


@rule(aten.gelu.default)
def _gelu(self: Any, approximate: str = "none") -> Any:
    return c("gelu", [self], approximate=approximate)


@rule(aten.threshold_backward.default)
def _threshold_backward(grad_output: Any, self: Any, threshold: Any) -> Any:
    return c("threshold_backward", [grad_output, self], threshold=float(threshold))
same_name("fill_", aten.fill_.Tensor)


# ---------------------------------------------------------------- reductions
def _dims(dim: Any) -> Any:
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else list(dim)


@rule(aten.sum.default)
def _sum_all(self: Any, dtype: Any = None) -> Any:
    return c("sum", [self], dtype=dtype)


@rule(aten.sum.dim_IntList)
def _sum(self: Any, dim: Any, keepdim: bool = False, dtype: Any = None) -> Any:
    return c("sum", [self], dim=_dims(dim), keepdim=keepdim, dtype=dtype)


@rule(aten.mean.default)
def _mean_all(self: Any, dtype: Any = None) -> Any:
    return c("mean", [self], dtype=dtype)


@rule(aten.mean.dim)
def _mean(self: Any, dim: Any, keepdim: bool = False, dtype: Any = None) -> Any:
    return c("mean", [self], dim=_dims(dim), keepdim=keepdim, dtype=dtype)


def _named_reduce(name: str) -> Callable[..., Any]:
    def fn(self: Any, dim: Any = (), keepdim: bool = False) -> Any:
        return c(name, [self], dim=_dims(dim) or None, keepdim=keepdim)
    return fn


RULES[aten.amax.default] = _named_reduce("amax")
RULES[aten.amin.default] = _named_reduce("amin")


@rule(aten.max.default)
def _max_all(self: Any) -> Any:
    return c("amax", [self])


@rule(aten.min.default)
def _min_all(self: Any) -> Any:
    return c("amin", [self])


def _max_dim(name: str) -> Callable[..., Any]:
    def fn(self: Any, dim: int, keepdim: bool = False) -> Any:
        return native_call(name, [self], {"dim": dim, "keepdim": keepdim}, num_outputs=2)
    return fn


RULES[aten.max.dim] = _max_dim("max")
RULES[aten.min.dim] = _max_dim("min")


def _arg_reduce(name: str) -> Callable[..., Any]:
    def fn(self: Any, dim: Any = None, keepdim: bool = False) -> Any:
        return c(name, [self], dim=dim, keepdim=keepdim)
    return fn


RULES[aten.argmax.default] = _arg_reduce("argmax")
RULES[aten.argmin.default] = _arg_reduce("argmin")


@rule(aten.linalg_vector_norm.default)
def _norm(self: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False,  # noqa: A002
          dtype: Any = None) -> Any:
    if dtype is not None:
        return NotImplemented
    return c("norm", [self], p=float(ord), dim=_dims(dim), keepdim=keepdim)


def _correction_rule(name: str) -> Callable[..., Any]:
    def fn(self: Any, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Any:
        return c(name, [self], dim=_dims(dim), keepdim=keepdim,
                 correction=None if correction is None else float(correction))
    return fn


RULES[aten.var.correction] = _correction_rule("var")
RULES[aten.std.correction] = _correction_rule("std")


@rule(aten.logsumexp.default)
def _logsumexp(self: Any, dim: Any, keepdim: bool = False) -> Any:
    return c("logsumexp", [self], dim=_dims(dim), keepdim=keepdim)


@rule(aten.prod.default)
def _prod_all(self: Any, dtype: Any = None) -> Any:
    return c("prod", [self], dtype=dtype)


@rule(aten.prod.dim_int)
def _prod(self: Any, dim: int, keepdim: bool = False, dtype: Any = None) -> Any:
    return c("prod", [self], dim=[dim], keepdim=keepdim, dtype=dtype)


# ---------------------------------------------------------------- along one dim
@rule(aten.sort.default)
def _sort(self: Any, dim: int = -1, descending: bool = False) -> Any:
    return tuple(c("sort", [self], dim=dim, descending=descending))


@rule(aten.sort.stable)
def _sort_stable(self: Any, *, stable: Any = None, dim: int = -1,
                 descending: bool = False) -> Any:
    return tuple(c("sort", [self], dim=dim, descending=descending, stable=bool(stable)))


@rule(aten.topk.default)
def _topk(self: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    return tuple(c("topk", [self], k=k, dim=dim, largest=largest, sorted=sorted))


@rule(aten.cumsum.default)
def _cumsum(self: Any, dim: int, *, dtype: Any = None) -> Any:
    return c("cumsum", [self], dim=dim, dtype=dtype)


@rule(aten.flip.default)
def _flip(self: Any, dims: Any) -> Any:
    return c("flip", [self], dims=list(dims))


@rule(aten.multinomial.default)
def _multinomial(self: Any, num_samples: int, replacement: bool = False, *,
                 generator: Any = None) -> Any:
    if generator is not None:  # a torch.Generator's stream: PyTorch's own, on the CPU
        return NotImplemented
    return c("multinomial", [self], num_samples=num_samples, replacement=replacement)


same_name("atan2", aten.atan2.default)


def _bool_reduce(name: str) -> Callable[..., Any]:
    def fn(self: Any, dim: Any = None, keepdim: bool = False) -> Any:
        return c(name, [self], dim=_dims(dim), keepdim=keepdim)
    return fn


for _n in ["any", "all"]:
    for _o in ["default", "dim", "dims"]:
        if hasattr(getattr(aten, _n), _o):
            RULES[getattr(getattr(aten, _n), _o)] = _bool_reduce(_n)


# ---------------------------------------------------------------- linear algebra
def _one_dtype(*ts: Any) -> list:
    """The products' tensors, of one dtype as ATen's CPU kernels require (the daemon would
    promote): PyTorch's error otherwise."""
    for t in ts[1:]:
        if t.dtype != ts[0].dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{ts[0].dtype} != {t.dtype}")
    return list(ts)


@rule(aten.mm.default)
def _mm(self: Any, mat2: Any) -> Any:
    return c("mm", _one_dtype(self, mat2))


@rule(aten.bmm.default)
def _bmm(self: Any, mat2: Any) -> Any:
    return c("bmm", _one_dtype(self, mat2))


for _n in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
    same_name(_n, getattr(aten, _n).Tensor)


@rule(aten.addmm.default)
def _addmm(self: Any, mat1: Any, mat2: Any, beta: Any = 1, alpha: Any = 1) -> Any:
    return c("addmm", _one_dtype(self, mat1, mat2), beta=float(beta), alpha=float(alpha))


# ---------------------------------------------------------------- views and shapes
@rule(aten.view.default)
def _view(self: Any, size: Any) -> Any:
    return c("view", [self], shape=list(size))


@rule(aten._unsafe_view.default, aten.reshape.default)
def _reshape(self: Any, size: Any) -> Any:
    return c("reshape", [self], shape=list(size))


same_name("t", aten.t.default)


@rule(aten.transpose.int)
def _transpose(self: Any, dim0: int, dim1: int) -> Any:
    return c("transpose", [self], dim0=dim0, dim1=dim1)


@rule(aten.permute.default)
def _permute(self: Any, dims: Any) -> Any:
    return c("permute", [self], dims=list(dims))


@rule(aten.expand.default)
def _expand(self: Any, size: Any, implicit: bool = False) -> Any:
    return c("expand", [self], size=list(size))


@rule(aten.select.int)
def _select(self: Any, dim: int, index: int) -> Any:
    return c("select", [self], dim=dim, index=index)


@rule(aten.slice.Tensor)
def _slice(self: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Any:
    return c("slice", [self], dim=dim, start=0 if start is None else start,
             end=_BIG if end is None else min(end, _BIG), step=step)


@rule(aten.squeeze.dim)
def _squeeze_dim(self: Any, dim: int) -> Any:
    return c("squeeze", [self], dim=dim)


@rule(aten.squeeze.default)
def _squeeze(self: Any) -> Any:
    return c("squeeze", [self])


@rule(aten.unsqueeze.default)
def _unsqueeze(self: Any, dim: int) -> Any:
    return c("unsqueeze", [self], dim=dim)


@rule(aten.cat.default)
def _cat(tensors: Any, dim: int = 0) -> Any:
    return c("cat", list(tensors), dim=dim)


@rule(aten.stack.default)
def _stack(tensors: Any, dim: int = 0) -> Any:
    return c("stack", list(tensors), dim=dim)


@rule(aten.clone.default)
def _clone(self: Any, memory_format: Any = None) -> Any:
    return c("clone", [self])

