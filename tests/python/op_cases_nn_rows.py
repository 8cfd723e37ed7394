"""Reference cases of op_cases.py for the neural-net rows added with ATen's schemas: the 3-d
grid sampler, the multi-class margin losses, segment_reduce and the fused group_norm
(runtime/ops/grid_sample_3d_ops.cc, margin_loss_ops.cc, segment_reduce_ops.cc,
group_norm_ops.cc), each with its backward row; embedding_bag's and the CTC loss's in
op_cases_bag_ctc.py. The references are ATen's own ops (torch.ops.aten.<name>), the daemon's
string attributes mapped to ATen's enums. The rows are CPU-only (KnownCpuOnly): cuda:0 skips
them."""

from __future__ import annotations

from typing import Any, List, Optional

import torch

from op_case_inputs import NC, Case, I, R
from op_cases_bag_ctc import CPU_ONLY as BAG_CTC_CPU_ONLY
from op_cases_bag_ctc import ctc_cases, embedding_bag_cases, embedding_cases

F64 = torch.float64
aten = torch.ops.aten
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}  # ATen's Reduction enum


# ------------------------------------------------------------------------------- grid sampler
def _grid(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    """Sample points in [-1.3, 1.3]: some outside the volume, for the padding modes."""
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, 3, generator=g, dtype=F64) * 2.6 - 1.3).to(dtype)


def _sampler(x: torch.Tensor, g: torch.Tensor, interpolation_mode: int = 0,
             padding_mode: int = 0, align_corners: bool = False) -> torch.Tensor:
    return aten.grid_sampler_3d(x, g, interpolation_mode, padding_mode, align_corners)


def _sampler_backward(go: torch.Tensor, x: torch.Tensor, g: torch.Tensor,
                      interpolation_mode: int = 0, padding_mode: int = 0,
                      align_corners: bool = False, output_mask: Any = (1, 1)) -> tuple:
    """ATen's, with the input gradient it does not compute (output_mask[0] == 0) zeros, as the
    daemon's row gives it."""
    gx, gg = aten.grid_sampler_3d_backward(go, x, g, interpolation_mode, padding_mode,
                                           align_corners, [bool(m) for m in output_mask])
    return (torch.zeros_like(x) if gx is None else gx), gg


def grid_sampler_cases() -> List[Case]:
    c = []
    for mode in (0, 1):
        for pad in (0, 1, 2):
            for align in (False, True):
                dtype = F64 if (mode + pad) % 2 else torch.float32
                c.append(Case("grid_sampler_3d",
                              [R(2, 3, 4, 5, 3, dtype=dtype, seed=pad),
                               _grid(2, 3, 2, 4, dtype=dtype, seed=mode + 2 * pad)],
                              {"interpolation_mode": mode, "padding_mode": pad,
                               "align_corners": align}, ref=_sampler, rtol=1e-4))
    c += [Case("grid_sampler_3d", [NC(R(1, 2, 3, 3, 4, seed=7)), _grid(1, 2, 2, 2, seed=8)],
               ref=_sampler, rtol=1e-4),
          Case("grid_sampler_3d", [R(2, 1, 3, 2, 2, dtype=F64), NC(_grid(2, 1, 3, 2, dtype=F64))],
               {"padding_mode": 1, "align_corners": True}, ref=_sampler)]
    for kw, dtype in (({}, torch.float32), ({"interpolation_mode": 1, "padding_mode": 2}, F64),
                      ({"padding_mode": 1, "align_corners": True, "output_mask": [0, 1]}, F64),
                      ({"padding_mode": 2, "output_mask": [1, 0]}, torch.float32)):
        c.append(Case("grid_sampler_3d_backward",
                      [R(2, 3, 2, 3, 4, dtype=dtype, seed=9), R(2, 3, 4, 5, 3, dtype=dtype),
                       _grid(2, 2, 3, 4, dtype=dtype, seed=10)], kw, ref=_sampler_backward,
                      rtol=1e-4))
    return c


# ---------------------------------------------------------------------------- margin losses
def _multi_margin(x: torch.Tensor, t: torch.Tensor, w: Optional[torch.Tensor] = None,
                  p: float = 1.0, margin: float = 1.0, reduction: str = "mean") -> torch.Tensor:
    return aten.multi_margin_loss(x, t, p, margin, w, REDUCTIONS[reduction])


def _multi_margin_backward(go: torch.Tensor, x: torch.Tensor, t: torch.Tensor,
                           w: Optional[torch.Tensor] = None, p: float = 1.0,
                           margin: float = 1.0, reduction: str = "mean") -> torch.Tensor:
    return aten.multi_margin_loss_backward(go, x, t, p, margin, w, REDUCTIONS[reduction])


def _multilabel(x: torch.Tensor, t: torch.Tensor, reduction: str = "mean") -> tuple:
    return aten.multilabel_margin_loss_forward(x, t, REDUCTIONS[reduction])


def _multilabel_backward(go: torch.Tensor, x: torch.Tensor, t: torch.Tensor,
                         is_target: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    return aten.multilabel_margin_loss_backward(go, x, t, REDUCTIONS[reduction], is_target)


LABELS = torch.tensor([[3, 0, -1, 1], [1, 2, 3, 0], [2, -1, 0, 0]])  # up to the first -1


def margin_loss_cases() -> List[Case]:
    c = []
    for reduction in ("mean", "sum", "none"):
        c += [Case("multi_margin_loss", [R(3, 4), I(3, high=4)], {"reduction": reduction},
                   ref=_multi_margin),
              Case("multi_margin_loss", [R(5, 3, dtype=F64, seed=1), I(5, high=3, seed=1),
                                         R(3, dtype=F64, lo=0.2, seed=2)],
                   {"p": 2.0, "margin": 0.7, "reduction": reduction}, ref=_multi_margin),
              Case("multi_margin_loss", [R(4, dtype=F64, seed=3), torch.tensor(2)],
                   {"reduction": reduction}, ref=_multi_margin),
              Case("multilabel_margin_loss_forward", [R(3, 4, seed=4), LABELS],
                   {"reduction": reduction}, ref=_multilabel),
              Case("multilabel_margin_loss_forward", [R(4, dtype=F64, seed=5), LABELS[0]],
                   {"reduction": reduction}, ref=_multilabel)]
    c += [Case("multi_margin_loss", [NC(R(4, 5, seed=6)), I(4, high=5, seed=6), R(5, lo=0.2)],
               {"margin": 1.5}, ref=_multi_margin),
          Case("multi_margin_loss", [R(1, 6, dtype=F64, seed=7), I(1, high=6)], {"p": 2.0},
               ref=_multi_margin),
          Case("multilabel_margin_loss_forward", [NC(R(4, 3, dtype=F64, seed=8)),
                                                  torch.tensor([[0, 1, -1]] * 2 + [[2, 2, 0]] * 2)],
               {"reduction": "sum"}, ref=_multilabel)]
    x, t, w = R(3, 4, dtype=F64, seed=9), I(3, high=4, seed=9), R(4, dtype=F64, lo=0.2)
    c += [Case("multi_margin_loss_backward", [R(), R(3, 4, seed=10), I(3, high=4, seed=10)],
               ref=_multi_margin_backward),
          Case("multi_margin_loss_backward", [R(3, dtype=F64, seed=11), x, t, w],
               {"p": 2.0, "margin": 0.5, "reduction": "none"}, ref=_multi_margin_backward),
          Case("multi_margin_loss_backward", [R(dtype=F64), NC(x), t], {"reduction": "sum"},
               ref=_multi_margin_backward)]
    for reduction, xs, ts in (("mean", R(3, 4, seed=12), LABELS),
                              ("none", R(3, 4, dtype=F64, seed=13), LABELS),
                              ("sum", R(4, dtype=F64, seed=14), LABELS[1])):
        loss, is_target = _multilabel(xs, ts, reduction)
        go = R(*loss.shape, dtype=xs.dtype, seed=15)
        c.append(Case("multilabel_margin_loss_backward", [go, xs, ts, is_target],
                      {"reduction": reduction}, ref=_multilabel_backward))
    return c


# --------------------------------------------------------------------------- segment_reduce
def _segment_reduce(data: torch.Tensor, bounds: torch.Tensor, reduce: str = "sum",
                    axis: int = 0, offsets: bool = False, unsafe: bool = False,
                    has_initial: bool = False, initial: float = 0.0) -> torch.Tensor:
    kind = "offsets" if offsets else "lengths"
    return torch.segment_reduce(data, reduce, **{kind: bounds}, axis=axis, unsafe=unsafe,
                                initial=initial if has_initial else None)


def _segment_backward(grad: torch.Tensor, out: torch.Tensor, data: torch.Tensor,
                      bounds: torch.Tensor, reduce: str = "sum", axis: int = 0,
                      offsets: bool = False, has_initial: bool = False,
                      initial: float = 0.0) -> torch.Tensor:
    kind = "offsets" if offsets else "lengths"
    return aten._segment_reduce_backward(grad, out, data, reduce, **{kind: bounds}, axis=axis,
                                         initial=initial if has_initial else None)


def segment_reduce_cases() -> List[Case]:
    lengths = torch.tensor([2, 0, 3, 1])  # an empty segment: initial, the identity or NaN
    full = torch.tensor([2, 3, 1])
    c = []
    for reduce in ("sum", "mean", "max", "min", "prod"):
        # An empty segment without initial: a mean is NaN, a max or min infinite (no finite
        # differences); a sum or product is its identity.
        empty_ok = reduce in ("sum", "prod")
        c += [Case("segment_reduce", [R(6, 3, seed=1), lengths if empty_ok else full],
                   {"reduce": reduce}, ref=_segment_reduce),
              Case("segment_reduce", [R(6, 3, dtype=F64, seed=2), lengths],
                   {"reduce": reduce, "has_initial": True, "initial": 0.5},
                   ref=_segment_reduce),
              Case("segment_reduce", [NC(R(2, 6, dtype=F64, seed=3)),
                                      torch.tensor([[0, 2, 5, 6], [0, 1, 2 - empty_ok, 6]])],
                   {"reduce": reduce, "axis": 1, "offsets": True}, ref=_segment_reduce),
              Case("segment_reduce", [R(2, 5, 2, seed=4), torch.tensor([[2, 3], [4, 1]])],
                   {"reduce": reduce, "axis": -2, "unsafe": True}, ref=_segment_reduce)]
    for reduce, dtype in (("sum", torch.float32), ("mean", F64), ("max", F64),
                          ("prod", torch.float32)):
        data = R(6, 3, dtype=dtype, seed=5)
        kw = {"reduce": reduce, "has_initial": True, "initial": 1.5}
        out = _segment_reduce(data, lengths, **kw)
        c.append(Case("_segment_reduce_backward",
                      [R(*out.shape, dtype=dtype, seed=6), out, data, lengths],
                      kw, ref=_segment_backward))
    data = R(2, 6, dtype=F64, seed=7)
    offs = torch.tensor([[0, 2, 6], [0, 3, 6]])
    out = _segment_reduce(data, offs, "min", axis=1, offsets=True)
    c.append(Case("_segment_reduce_backward", [R(2, 2, dtype=F64), out, data, offs],
                  {"reduce": "min", "axis": 1, "offsets": True}, ref=_segment_backward))
    return c


# ------------------------------------------------------------------------------- group_norm
def _group_norm(x: torch.Tensor, w: torch.Tensor = None, b: torch.Tensor = None, N: int = 0,
                C: int = 0, HxW: int = 0, group: int = 1, eps: float = 1e-5) -> tuple:
    """F.group_norm's output and the [N, group] statistics, carrying no gradient (as ATen's
    native_group_norm's)."""
    g = x.reshape(N, group, C // group * HxW)
    var, mean = torch.var_mean(g, -1, unbiased=False)
    y = torch.nn.functional.group_norm(x, group, w, b, eps)
    return y, mean.detach(), (var + eps).rsqrt().detach()


def _group_norm_backward(go: torch.Tensor, x: torch.Tensor, mean: torch.Tensor,
                         rstd: torch.Tensor, w: torch.Tensor = None, N: int = 0, C: int = 0,
                         HxW: int = 0, group: int = 1, output_mask: Any = (1, 1, 1)) -> tuple:
    """ATen's, with the gradients it does not compute (output_mask 0) zeros, as the row's.
    Without a weight: ones (torch 1.13's kernel fails on None; the gradients are the same)."""
    w = x.new_ones(C) if w is None else w
    out = aten.native_group_norm_backward(go, x, mean, rstd, w, N, C, HxW, group,
                                          [bool(m) for m in output_mask])
    like = (x, x.new_zeros(C), x.new_zeros(C))
    return tuple(torch.zeros_like(z) if o is None else o for o, z in zip(out, like))


def group_norm_cases() -> List[Case]:
    def geo(n: int, c: int, hw: int, group: int, **kw: Any) -> dict:
        return {"N": n, "C": c, "HxW": hw, "group": group, **kw}

    fwd = [  # odd HxW, one group, C == groups, no affine, non-contiguous, an empty batch
        ([R(2, 6, 5, 3), R(6, seed=1), R(6, seed=2)], geo(2, 6, 15, 3)),
        ([R(3, 4, 7, dtype=F64), R(4, dtype=F64, seed=1)], geo(3, 4, 7, 1, eps=1e-3)),
        ([R(2, 5, 3, dtype=F64), R(5, dtype=F64, seed=1), R(5, dtype=F64, seed=2)],
         geo(2, 5, 3, 5)),
        ([R(2, 4, 9)], geo(2, 4, 9, 2)),
        ([NC(R(3, 6, 5, dtype=F64)), R(6, dtype=F64, seed=1), R(6, dtype=F64, seed=2)],
         geo(3, 6, 5, 2)),
        ([R(0, 4, 3), R(4, seed=1), R(4, seed=2)], geo(0, 4, 3, 2)),
    ]
    c = [Case("native_group_norm", a, k, ref=_group_norm, nout=3) for a, k in fwd]
    for dtype, w, mask in ((torch.float32, True, (1, 1, 1)), (F64, False, (1, 1, 1)),
                           (F64, True, (0, 1, 1)), (torch.float32, True, (1, 0, 0))):
        ins = [R(2, 6, 5, dtype=dtype, seed=1), R(2, 6, 5, dtype=dtype), R(2, 3, dtype=dtype),
               R(2, 3, dtype=dtype, lo=0.5)] + ([R(6, dtype=dtype, seed=2)] if w else [])
        c.append(Case("native_group_norm_backward", ins, geo(2, 6, 5, 3, output_mask=mask),
                      ref=_group_norm_backward, nout=3, rtol=1e-4))
    return c


def nn_row_cases() -> List[Case]:
    return (grid_sampler_cases() + margin_loss_cases() + segment_reduce_cases() +
            embedding_cases() + embedding_bag_cases() + ctc_cases() + group_norm_cases())


# The rows without a CUDA kernel (KnownCpuOnly of runtime/ops/known_cpu_only.cc).
CPU_ONLY = {"grid_sampler_3d", "grid_sampler_3d_backward", "multi_margin_loss",
            "multi_margin_loss_backward", "multilabel_margin_loss_forward",
            "multilabel_margin_loss_backward", "segment_reduce",
            "_segment_reduce_backward", "native_group_norm",
            "native_group_norm_backward"} | BAG_CTC_CPU_ONLY
