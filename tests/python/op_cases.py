"""The reference cases of test_ops_reference.py: one or more per catalog op (the neural-net
and autograd-support rows' in op_cases_nn.py, the adaptive max pools', 3-d pools' and
avg_pool2d divisor_override's in op_cases_pool.py, torch.special's and nonzero_static's in
op_cases_special.py, the losses' in op_cases_losses.py, the math functions' in
op_cases_math.py, the 3-d grid sampler's, margin losses', segment_reduce's, embedding_bag's and
CTC loss's in op_cases_nn_rows.py, F.bilinear's, antialiased interpolation's and histogramdd's
in op_cases_resample.py, the case type and input makers in op_case_inputs.py).

A case names the daemon op, its arguments (torch tensors, ``NC(t)`` for a non-contiguous daemon
tensor with t's values, Python scalars) and keyword attributes, and how to compute the same with
torch (default: ``torch.<op>`` with the same arguments). Attribute names are PyTorch's.
"""

from __future__ import annotations

from typing import Any, Callable, List

import torch
import torch.nn.functional as F

from op_case_inputs import BROADCAST_SHAPES, NC, Case, I, R  # noqa: F401 (NC, Case: the tests' names)
from op_cases_attention import attention_cases
from op_cases_distance import distance_cases
from op_cases_linalg import linalg_cases
from op_cases_losses import loss_cases
from op_cases_math import math_cases
from op_cases_nn import autograd_support_cases, nn_cases
from op_cases_nn_rows import nn_row_cases
from op_cases_pool import pool_cases
from op_cases_qr import qr_cases
from op_cases_resample import resample_cases
from op_cases_scan import scan_cases
from op_cases_special import special_cases

UNARY = ["neg", "abs", "sign", "exp", "sin", "cos", "tanh", "sigmoid", "relu", "erf", "floor",
         "ceil", "round", "trunc", "square", "expm1", "reciprocal"]
POSITIVE = ["log", "log1p", "sqrt", "rsqrt"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"]


def _scatter_reduce(x: torch.Tensor, i: torch.Tensor, s: torch.Tensor, dim: int, reduce: str,
                    include_self: bool = True) -> torch.Tensor:
    return torch.scatter_reduce(x, dim, i, s, reduce, include_self=include_self)


def _index_reduce(x: torch.Tensor, i: torch.Tensor, s: torch.Tensor, dim: int, reduce: str,
                  include_self: bool = True) -> torch.Tensor:
    return x.index_reduce(dim, i, s, reduce, include_self=include_self)


def _random_check(mean: float, std: float) -> Callable[[Any, Any], None]:
    def check(got: Any, want: Any) -> None:
        g = torch.from_numpy(got.numpy()).double()
        assert tuple(g.shape) == tuple(want.shape) and got.dtype.is_floating_point
        assert abs(g.mean().item() - mean) < 0.05 and abs(g.std().item() - std) < 0.05
    return check


def _shape_check(got: Any, want: Any) -> None:
    assert tuple(got.shape) == tuple(want.shape)
def _multinomial_check(distinct: bool) -> Callable[[Any, Any], None]:
    def check(got: Any, want: Any) -> None:
        g = torch.from_numpy(got.numpy())
        assert g.dtype == torch.int64 and g.shape == want.shape
        assert g.min().item() >= 0 and g.max().item() < 6
        if distinct:  # without replacement: each category once
            assert sorted(g.tolist()) == list(range(6))
    return check


def _randint_check(got: Any, want: Any) -> None:
    g = torch.from_numpy(got.numpy())
    assert g.dtype == torch.int64 and tuple(g.shape) == (1000,)
    assert g.min().item() == 3 and g.max().item() == 9


def _randperm_check(got: Any, want: Any) -> None:
    g = torch.from_numpy(got.numpy())
    assert g.dtype == want.dtype and sorted(g.tolist()) == list(range(want.numel()))


def _selection_cases() -> List[Case]:
    """tril/triu, roll, clamp_min/clamp_max with tensor bounds, leaky_relu, randperm, index_put
    and conv_transpose2d."""
    return [
        Case("tril", [R(3, 4)]), Case("tril", [NC(R(4, 5))], {"diagonal": -1}),
        Case("tril", [R(2, 3, 4, dtype=torch.int64)], {"diagonal": 2}),
        Case("triu", [R(3, 4)]), Case("triu", [R(2, 4, 3, dtype=torch.float64)], {"diagonal": 1}),
        Case("triu", [R(3, 3, dtype=torch.bool)], {"diagonal": -1}),
        Case("roll", [R(3, 4)], {"shifts": (1, -5), "dims": (0, 1)}),
        Case("roll", [NC(R(3, 4))], {"shifts": (2,)}), Case("roll", [R(2, 5)], {"shifts": (0,), "dims": (1,)}),
        Case("roll", [R(6, dtype=torch.int64)], {"shifts": (-7,), "dims": (0,)}),
        Case("clamp_min", [R(3, 4), R(4, seed=1)], ref=lambda x, m: torch.clamp(x, min=m)),
        Case("clamp_min", [R(3, 4, dtype=torch.int64), R(3, 1, dtype=torch.int64, seed=1)],
             ref=lambda x, m: torch.clamp(x, min=m)),
        Case("clamp_max", [NC(R(3, 4)), R(3, 4, seed=1)], ref=lambda x, m: torch.clamp(x, max=m)),
        Case("clamp_max", [R(2, 3, dtype=torch.float64), R(3, dtype=torch.float64, seed=2)],
             ref=lambda x, m: torch.clamp(x, max=m)),
        # bool bounds: PyTorch's clamp_min/clamp_max are its maximum/minimum (or/and), which take
        # bool and promote with int64 (its clamp(min=tensor) refuses bool).
        Case("clamp_min", [R(3, 4, dtype=torch.bool), R(4, dtype=torch.bool, seed=1)],
             ref=torch.clamp_min),
        Case("clamp_max", [NC(R(3, 4, dtype=torch.bool)), R(3, 1, dtype=torch.bool, seed=2)],
             ref=torch.clamp_max),
        Case("clamp_min", [R(6, dtype=torch.int64), R(6, dtype=torch.bool, seed=3)],
             ref=torch.clamp_min),
        Case("clamp_max", [R(6, dtype=torch.bool, seed=4), R(6, dtype=torch.int64)],
             ref=torch.clamp_max),
        Case("leaky_relu", [R(3, 4)], ref=F.leaky_relu),
        Case("leaky_relu", [NC(R(3, 4, dtype=torch.float64))], {"negative_slope": 0.2}, ref=F.leaky_relu),
        Case("randperm", [], {"n": 50}, ref=lambda n: torch.randperm(n), check=_randperm_check),
        Case("randperm", [], {"n": 0}, ref=lambda n: torch.randperm(n), check=_randperm_check),
        Case("randperm", [], {"n": 9, "dtype": torch.float32},
             ref=lambda n, dtype: torch.randperm(n, dtype=dtype), check=_randperm_check),
        Case("index_put", [R(3, 4), R(seed=1), R(3, 4, dtype=torch.bool)],
             ref=lambda x, v, m: x.index_put((m,), v)),
        Case("index_put", [R(3, 4, 2), R(2, seed=1), R(3, dtype=torch.bool)], {"accumulate": True},
             ref=lambda x, v, m, accumulate: x.index_put((m,), v, accumulate=accumulate)),
        Case("index_put", [R(5, 3, dtype=torch.float64), R(3, 3, dtype=torch.float64, seed=1),
                           torch.tensor([4, -5, 2])],
             ref=lambda x, v, i: x.index_put((i,), v)),
        Case("index_put", [R(4, 2), R(2, seed=1), torch.tensor([1, 1, -1])], {"accumulate": True},
             ref=lambda x, v, i, accumulate: x.index_put((i,), v, accumulate=accumulate)),
        Case("conv_transpose2d", [R(2, 4, 3, 3), R(4, 3, 3, 3), R(6)],
             {"stride": (2,), "padding": (1,), "output_padding": (1,), "groups": 2},
             ref=F.conv_transpose2d),
        Case("conv_transpose2d", [R(1, 2, 4, 5, dtype=torch.float64), R(2, 3, 2, 3, dtype=torch.float64)],
             {"stride": (1, 2), "dilation": (2, 1)}, ref=F.conv_transpose2d),
    ]


def cases() -> List[Case]:
    c: List[Case] = _selection_cases() + loss_cases() + math_cases()
    # ---------------------------------------------------------------- unary
    for op in UNARY:
        c += [Case(op, [R(3, 4)]), Case(op, [NC(R(4, 5))]), Case(op, [R()]), Case(op, [R(0, 2)]),
              Case(op, [R(5, dtype=torch.float64)])]
    for op in POSITIVE:
        c += [Case(op, [R(3, 4, lo=0.1)]), Case(op, [NC(R(4, 3, lo=0.1))])]
    for op in ["exp", "sqrt", "sigmoid"]:
        c.append(Case(op, [R(6, dtype=torch.int64).abs()]))  # integer input: float32 result
    for op in ["neg", "abs", "sign", "floor"]:
        c.append(Case(op, [R(6, dtype=torch.int32)]))
    c += [Case("sign", [R(6, dtype=torch.bool)]), Case("sign", [NC(R(3, 4, dtype=torch.bool))])]
    c += [Case("gelu", [R(3, 4)]), Case("silu", [R(3, 4)]), Case("exp", [R(3, 4, dtype=torch.float16)], ref=lambda x: x.float().exp().half()),
          Case("tanh", [R(3, 4, dtype=torch.bfloat16)]),
          Case("bitwise_not", [R(3, 4, dtype=torch.int64)]), Case("bitwise_not", [R(4, dtype=torch.bool)]),
          Case("logical_not", [R(3, 4)]), Case("logical_not", [R(3, dtype=torch.bool)]),
          Case("clamp", [R(3, 4)], {"min": -0.5, "max": 0.5}),
          Case("clamp", [NC(R(3, 4))], {"min": 0.1}),
          Case("clamp", [R(3, 4, dtype=torch.int64)], {"max": 2}),
          Case("clamp", [R(5, dtype=torch.int64)], {"min": 0.5}),
          Case("clamp", [R(5)], {"min": 1.0, "max": -1.0}),
          # bool: promoted with the bound as PyTorch does (int64, or float32 if fractional)
          Case("clamp", [R(6, dtype=torch.bool)], {"min": 0, "max": 1}),
          Case("clamp", [NC(R(3, 4, dtype=torch.bool))], {"min": 0.5})]
    # --------------------------------------------------------------- binary
    for op in BINARY + COMPARE:
        for a, b in BROADCAST_SHAPES:
            c.append(Case(op, [R(*a), R(*b, seed=1)]))
        c += [Case(op, [NC(R(3, 4)), 2]), Case(op, [R(2, 3, dtype=torch.int64), R(3, dtype=torch.int32)]),
              Case(op, [R(3, dtype=torch.int64), 1.5]), Case(op, [R(3, dtype=torch.float16), R(3)])]
    c += [Case("add", [R(2, 3), R(3)], {"alpha": 2.5}), Case("sub", [R(2, 3), 1], {"alpha": 2}),
          Case("div", [R(4, dtype=torch.int64), R(4, dtype=torch.int64).abs() + 1]),
          Case("div", [R(5), R(5, seed=1)], {"rounding_mode": "floor"}),
          Case("div", [R(6, dtype=torch.int64), 4], {"rounding_mode": "trunc"}),
          Case("div", [R(6, dtype=torch.int64), -4], {"rounding_mode": "floor"}),
          Case("add", [R(3, dtype=torch.bool), R(3, dtype=torch.bool, seed=2)]),
          Case("mul", [R(3, dtype=torch.bool), 2.5]),
          Case("pow", [R(3, 4, lo=0.5), R(4)]), Case("pow", [R(3, 4), 2]),
          Case("pow", [R(5, dtype=torch.int64), 3]), Case("pow", [2, R(4)]),
          Case("remainder", [R(3, 4), R(4, lo=0.5)]), Case("remainder", [R(6, dtype=torch.int64), -4]),
          Case("floor_divide", [R(6, dtype=torch.int64), 4]), Case("floor_divide", [R(6), 0.7])]
    # relu's fused backward: grad where input > threshold (0 by default), broadcasting.
    tb = torch.ops.aten.threshold_backward
    c += [Case("threshold_backward", [R(3, 4), R(3, 4, seed=1)], ref=lambda g, x: tb(g, x, 0)),
          Case("threshold_backward", [R(2, 3, 4), R(3, 1, seed=2)], {"threshold": 0.3},
               ref=lambda g, x, threshold: tb(g, x, threshold)),
          Case("threshold_backward", [R(5, dtype=torch.float64), R(5, seed=3)],
               {"threshold": -0.2}, ref=lambda g, x, threshold: tb(g, x, threshold))]
    for op in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
        c += [Case(op, [R(3, 4, dtype=torch.int64), R(4, dtype=torch.int64, seed=1)]),
              Case(op, [R(5, dtype=torch.bool), R(5, dtype=torch.bool, seed=3)])]
    c += [Case("where", [R(3, 4, dtype=torch.bool), R(3, 4), R(4, seed=1)]),
          Case("where", [R(3, 1, dtype=torch.bool), R(1, 4, dtype=torch.int64), 0.5]),
          Case("masked_fill", [R(3, 4), R(4, dtype=torch.bool), -1.5]),
          Case("masked_fill", [NC(R(3, 4)), R(3, 4, dtype=torch.bool), 2],
               ref=lambda x, m, v: x.masked_fill(m, v))]
    # ------------------------------------------------------------- in place
    ip = lambda name: (lambda x, *a, **k: getattr(x.clone(), name)(*a, **k))  # noqa: E731
    c += [Case("add_", [R(3, 4), R(4)], {"alpha": 2.0}, ref=ip("add_")),
          Case("sub_", [R(3, 4), 1.5], ref=ip("sub_")), Case("mul_", [NC(R(3, 4)), R(4)], ref=ip("mul_")),
          Case("div_", [R(3, 4), R(3, 1, lo=0.5)], ref=ip("div_")),
          Case("add_", [R(3, dtype=torch.int64), 2], ref=ip("add_")),
          Case("clamp_", [R(3, 4)], {"min": -0.1, "max": 0.2}, ref=ip("clamp_")),
          Case("relu_", [R(3, 4)], ref=ip("relu_")), Case("zero_", [NC(R(3, 4))], ref=ip("zero_")),
          Case("fill_", [R(3, 4), 2.5], ref=ip("fill_")),
          Case("copy_", [R(3, 4), R(4, dtype=torch.int64)], ref=ip("copy_"))]
    # ----------------------------------------------------------- reductions
    for op in ["sum", "mean", "prod", "amax", "amin", "logsumexp", "all", "any"]:
        dims = [{"dim": 1}, {"dim": -1, "keepdim": True}, {"dim": -1}]
        if op not in ("prod", "all", "any"):  # torch 1.13 takes one dim for these
            dims.append({"dim": (0, 2), "keepdim": True})
        if op not in ("logsumexp",):
            dims.append({})
        for kw in dims:
            c.append(Case(op, [R(2, 3, 4)], kw))
        c.append(Case(op, [NC(R(4, 3))], {"dim": 0}))
        c.append(Case(op, [R()], {"dim": 0} if op == "logsumexp" else {}))
    c += [Case("sum", [R(3, 4, dtype=torch.int32)], {"dim": 1}), Case("sum", [R(5, dtype=torch.bool)]),
          Case("sum", [R(0, 3)], {"dim": 0}), Case("prod", [R(0, 3)]), Case("mean", [R(0, 3)], {"dim": 1}),
          Case("sum", [R(3, 4, dtype=torch.float16)], {"dim": 1}),
          Case("sum", [R(3, 4)], {"dtype": torch.float64}),
          Case("any", [R(3, 4, dtype=torch.int64)], {"dim": 1}),
          Case("all", [R(3, 4, dtype=torch.bool)], {"dim": 0}),
          Case("sum", [R(1 << 17)], rtol=1e-4)]
    for op in ["argmax", "argmin"]:
        c += [Case(op, [R(3, 4)]), Case(op, [R(3, 4)], {"dim": 1}),
              Case(op, [NC(R(3, 4))], {"dim": 0, "keepdim": True}),
              Case(op, [R(5, dtype=torch.int64)])]
    for op in ["var", "std"]:
        c += [Case(op, [R(3, 4)]), Case(op, [R(3, 4)], {"dim": 1, "unbiased": False}),
              Case(op, [R(2, 3, 4)], {"dim": (0, 2), "keepdim": True}),
              # Runs long enough for the 8-lane sums, several per output.
              Case(op, [R(3, 5, 43) * 3 + 1], {"dim": (0, 2)}),
              Case(op, [R(37, 5)], {"dim": 0}),
              Case(op, [R(3, 4)], {"dim": 0, "correction": 2},
                   ref=lambda x, dim, correction, op=op: getattr(torch, op)(x, dim=dim, correction=correction))]
    c += [Case("norm", [R(3, 4)]), Case("norm", [R(3, 4)], {"p": 1.0, "dim": 1}),
          Case("norm", [NC(R(3, 4))], {"p": float("inf"), "dim": 0, "keepdim": True}),
          Case("norm", [R(3, 4)], {"p": 3.0}, ref=lambda x, p: torch.norm(x, p=p))]
    for op in ["max", "min"]:
        c += [Case(op, [R(3, 4)], nout=1), Case(op, [R(3, 4)], {"dim": 1}, nout=2),
              Case(op, [R(2, 3, 4)], {"dim": 0, "keepdim": True}, nout=2),
              Case(op, [R(3, 4), R(4)], nout=1)]
    # --------------------------------------------------------------- linalg
    c += [Case("matmul", [R(3, 4), R(4, 5)]), Case("matmul", [NC(R(3, 4)), R(4)]),
          Case("matmul", [R(2, 3, 4), R(4, 2)]), Case("matmul", [R(4), R(4)]),
          Case("matmul", [R(3, 0), R(0, 2)]),
          # a size-1 batch dim last: the batches' stride is the outer dim's
          Case("matmul", [R(2, 1, 2, 1), R(1, 5)]), Case("matmul", [R(3, 1, 2, 3), R(1, 1, 3, 2)]),
          Case("mm", [R(3, 4), NC(R(4, 5))]), Case("mm", [R(3, 4, dtype=torch.float64), R(4, 2, dtype=torch.float64)]),
          Case("bmm", [R(2, 3, 4), R(2, 4, 5)]),
          Case("addmm", [R(5), R(3, 4), R(4, 5)], {"beta": 0.5, "alpha": 2.0}),
          Case("addmm", [R(3, 5), R(3, 4), R(4, 5)]),
          Case("linear", [R(2, 3), R(4, 3), R(4)], ref=F.linear),
          Case("linear", [R(5, 2, 3), NC(R(4, 3))], ref=F.linear)]
    # ---------------------------------------------------------------- views
    c += [Case("reshape", [R(2, 3, 4)], {"shape": (4, -1)}), Case("reshape", [NC(R(3, 4))], {"shape": (-1,)}),
          Case("view", [R(2, 3, 4)], {"shape": (6, 4)}, ref=lambda x, shape: x.view(shape)),
          Case("transpose", [R(2, 3, 4)], {"dim0": 0, "dim1": 2}),
          Case("t", [R(2, 3)]), Case("t", [R(3)]),
          Case("permute", [R(2, 3, 4)], {"dims": (2, 0, 1)}),
          Case("expand", [R(3, 1)], {"size": (2, 3, 4)}, ref=lambda x, size: x.expand(size)),
          Case("expand", [R(3, 1)], {"size": (-1, 5)}, ref=lambda x, size: x.expand(size)),
          Case("squeeze", [R(3, 1, 2, 1)]), Case("squeeze", [R(3, 1, 2)], {"dim": 1}),
          Case("unsqueeze", [R(3, 2)], {"dim": -1}), Case("unsqueeze", [R()], {"dim": 0}),
          Case("flatten", [R(2, 3, 4)], {"start_dim": 1}), Case("flatten", [R()]),
          Case("narrow", [R(4, 5)], {"dim": 1, "start": 1, "length": 3}),
          Case("select", [R(4, 5)], {"dim": 1, "index": -2}),
          Case("slice", [R(4, 7)], {"dim": 1, "start": 1, "end": 6, "step": 2},
               ref=lambda x, dim, start, end, step: x[:, start:end:step]),
          Case("slice", [NC(R(5, 4))], {"dim": 0, "step": 3}, ref=lambda x, dim, step: x[::step]),
          Case("as_strided", [R(4, 5)], {"size": [3, 4], "stride": [2, 1], "storage_offset": 5}),
          Case("as_strided", [R(5, 4)], {"size": [4, 2], "stride": [1, 0]}),  # storage order:
          # no NC case (the daemon stores an NC input transposed, PyTorch contiguously)
          Case("contiguous", [NC(R(3, 4))], ref=lambda x: x.contiguous()),
          Case("clone", [NC(R(3, 4))]),
          Case("to", [R(3, 4)], {"dtype": torch.int32}, ref=lambda x, dtype: x.to(dtype)),
          Case("to", [R(3, 4) * 100], {"dtype": torch.float16}, ref=lambda x, dtype: x.to(dtype)),
          Case("to", [R(3, 4)], {"dtype": torch.bfloat16}, ref=lambda x, dtype: x.to(dtype)),
          Case("to", [R(3, dtype=torch.int64)], {"dtype": torch.bool}, ref=lambda x, dtype: x.to(dtype)),
          Case("unbind", [R(3, 2)], {"dim": 1}, nout=2),
          Case("split", [R(5, 2)], {"split_size_or_sections": 2}, nout=3),
          Case("split", [R(5, 2)], {"split_size_or_sections": [1, 4]}, nout=2),
          Case("chunk", [R(5, 2)], {"chunks": 3}, nout=3),
          Case("cat", [[R(2, 3), NC(R(3, 4)).t.t(), R(1, 3)]], ref=torch.cat),
          Case("cat", [[R(2, 3), R(2, 1)]], {"dim": 1}, ref=torch.cat),
          Case("cat", [[R(2, dtype=torch.int64), R(3)]], ref=torch.cat),
          Case("stack", [[R(2, 3), R(2, 3)]], {"dim": 1}, ref=torch.stack)]
    # ------------------------------------------------------------- indexing
    c += [Case("index_select", [R(4, 5), I(3, high=5)], {"dim": 1},
               ref=lambda x, i, dim: torch.index_select(x, dim, i)),
          Case("index_select", [NC(R(4, 5)), I(6, high=4)], {"dim": 0},
               ref=lambda x, i, dim: torch.index_select(x, dim, i)),
          Case("gather", [R(3, 4), I(3, 2, high=4)], {"dim": 1}, ref=lambda x, i, dim: torch.gather(x, dim, i)),
          Case("gather", [R(3, 4), I(2, 4, high=3)], {"dim": 0}, ref=lambda x, i, dim: torch.gather(x, dim, i)),
          Case("scatter", [R(3, 4), torch.tensor([[0, 1], [2, 0]]), R(2, 2)], {"dim": 1},
               ref=lambda x, i, s, dim: torch.scatter(x, dim, i, s)),
          Case("scatter_add", [R(3, 4), I(5, 4, high=3), R(5, 4)], {"dim": 0},
               ref=lambda x, i, s, dim: torch.scatter_add(x, dim, i, s), rtol=1e-5),
          Case("scatter_reduce", [R(3, 4), I(5, 4, high=3), R(5, 4)], {"dim": 0, "reduce": "amax"},
               ref=_scatter_reduce),
          Case("scatter_reduce", [NC(R(4, 3)), I(3, 5, high=3, seed=1), R(3, 6)],
               {"dim": 1, "reduce": "mean", "include_self": False}, ref=_scatter_reduce, rtol=1e-5),
          Case("scatter_reduce", [R(4, dtype=torch.int64), I(7, high=4), R(7, dtype=torch.int64)],
               {"dim": 0, "reduce": "prod"}, ref=_scatter_reduce),
          Case("index_reduce", [R(3, 4), I(6, high=4, seed=2), R(3, 6)],
               {"dim": 1, "reduce": "amin", "include_self": False}, ref=_index_reduce),
          Case("index_reduce", [R(3, 4, dtype=torch.float64), I(5, high=3, seed=3),
                                R(5, 4, dtype=torch.float64)],
               {"dim": 0, "reduce": "mean"}, ref=_index_reduce),
          Case("embedding", [R(10, 3), I(2, 4, high=10)])]
    c += nn_cases()
    # ------------------------------------------------------- along one dim
    c += [Case("sort", [R(3, 5)], nout=2), Case("sort", [NC(R(4, 3))], {"dim": 0, "descending": True}, nout=2),
          Case("sort", [R(7, dtype=torch.int64)], {"stable": True}, nout=2),
          # bool: false before true; stable, so the indices of ties are PyTorch's too.
          Case("sort", [R(3, 9, dtype=torch.bool)], {"stable": True}, nout=2),
          Case("sort", [NC(R(5, 4, dtype=torch.bool))], {"dim": 0, "descending": True, "stable": True},
               nout=2),
          Case("argsort", [R(4, 7, dtype=torch.bool)], {"stable": True}),
          Case("argsort", [R(4, 7, dtype=torch.bool, seed=1)], {"dim": 0, "descending": True,
                                                                "stable": True}),
          Case("topk", [R(3, 5)], {"k": 2}, nout=2),
          Case("topk", [NC(R(4, 6))], {"k": 3, "dim": 0, "largest": False}, nout=2),
          Case("topk", [R(2, 3, dtype=torch.float64)], {"k": 0}, nout=2),
          Case("argsort", [R(3, 5)]), Case("argsort", [R(3, 5)], {"dim": 0, "descending": True}),
          Case("cumsum", [R(3, 4)], {"dim": 1}), Case("cumsum", [NC(R(2, 3))], {"dim": 0}),
          Case("cumsum", [R(2, 3, 4, dtype=torch.float64)], {"dim": -2}),
          Case("cumsum", [R(3, 4, dtype=torch.int32)], {"dim": 0}),
          Case("cumsum", [R(3, 4)], {"dim": 1, "dtype": torch.float64}),
          Case("cumprod", [R(3, 4)], {"dim": 1}), Case("cumprod", [R(3, 4, dtype=torch.int64)], {"dim": 0}),
          Case("flip", [R(2, 3, 4)], {"dims": (0, 2)}), Case("flip", [NC(R(3, 4))], {"dims": (-1,)}),
          Case("flip", [R(5, dtype=torch.int64)], {"dims": (0,)}),
          Case("atan2", [R(3, 4), R(3, 4, seed=1)]), Case("atan2", [R(2, 1, 4), NC(R(3, 4))]),
          Case("atan2", [R(2, 3, dtype=torch.float64), R(3, dtype=torch.float64, seed=2)]),
          Case("atan2", [R(4, dtype=torch.int64), R(4, dtype=torch.int64, seed=1)]),
          Case("multinomial", [R(3, 5, lo=0.1)], {"num_samples": 4, "replacement": True},
               check=_multinomial_check(False)),
          Case("multinomial", [R(6, lo=0.1, dtype=torch.float64)], {"num_samples": 6},
               check=_multinomial_check(True))]
    # ------------------------------------------------------------- creation
    c += [Case("zeros", [], {"shape": (2, 3)}, ref=lambda shape: torch.zeros(shape)),
          Case("ones", [], {"shape": (0, 3), "dtype": torch.int32},
               ref=lambda shape, dtype: torch.ones(shape, dtype=dtype)),
          Case("empty", [], {"shape": (4,)}, ref=lambda shape: torch.empty(shape), check=_shape_check),
          Case("full", [], {"shape": (2,), "fill_value": 7.0}, ref=lambda shape, fill_value: torch.full(shape, fill_value)),
          Case("arange", [], {"start": 1.0, "end": 4.0, "step": 0.5, "dtype": torch.float32},
               ref=lambda **k: torch.arange(**k)),
          Case("linspace", [], {"start": -1.0, "end": 2.0, "steps": 7}, ref=lambda **k: torch.linspace(**k)),
          Case("linspace", [], {"start": 0.0, "end": 1.0, "steps": 1}, ref=lambda **k: torch.linspace(**k)),
          Case("eye", [], {"n": 3}, ref=lambda n: torch.eye(n)),
          Case("eye", [], {"n": 2, "m": 4, "dtype": torch.int64}, ref=lambda **k: torch.eye(**k)),
          Case("randn", [], {"shape": (200, 100)}, ref=lambda shape: torch.randn(shape), check=_random_check(0, 1)),
          Case("rand", [], {"shape": (200, 100)}, ref=lambda shape: torch.rand(shape),
               check=_random_check(0.5, (1 / 12) ** 0.5)),
          Case("randint", [], {"low": 3, "high": 10, "size": (1000,)},
               ref=lambda **k: torch.randint(**k), check=_randint_check),
          Case("zeros_like", [R(2, 3)]), Case("ones_like", [R(2, dtype=torch.int64)]),
          Case("empty_like", [R(2, 3)], check=_shape_check),
          Case("full_like", [R(2, 3)], {"fill_value": 2.5}),
          Case("rand_like", [R(200, 100)], check=_random_check(0.5, (1 / 12) ** 0.5)),
          Case("randn_like", [R(200, 100, dtype=torch.float64)], check=_random_check(0, 1))]
    c += (autograd_support_cases() + pool_cases() + special_cases() + linalg_cases() +
          scan_cases() + distance_cases() + attention_cases() + qr_cases() + nn_row_cases() +
          resample_cases())
    return c
