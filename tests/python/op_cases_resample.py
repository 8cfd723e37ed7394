"""Reference cases of op_cases.py for the rows of F.bilinear, antialiased interpolation and
torch.histogramdd (runtime/ops/trilinear_ops.cc, upsample_aa_ops.cc, histogramdd_ops.cc), named
and shaped as ATen's ops, so the references are ATen's own: ``_trilinear`` (bilinear's call and
others: a sum over one operand's dims, no sum, size-1 dims broadcast), the antialiased bilinear
resampling and its backward (down and up, align_corners, given scales, both dims changing: torch
1.13 resamples a dim of unchanged size by a given scale, which PyTorch 2.x and the daemon do not),
histogramdd's edges, counts (weights, range, density) and searched edges. Every row but the
composite ``_trilinear`` is CPU-only (KnownCpuOnly): cuda:0 skips them."""

from __future__ import annotations

from typing import Any, List, Optional

import torch

from op_case_inputs import NC, Case, R

F64 = torch.float64
aten = torch.ops.aten

BILINEAR = {"expand1": [1, 3], "expand2": [0], "expand3": [1, 2], "sumdim": [2, 3]}


def _trilinear(i1: torch.Tensor, i2: torch.Tensor, i3: torch.Tensor, expand1: List[int],
               expand2: List[int], expand3: List[int], sumdim: List[int],
               unroll_dim: int = 1) -> torch.Tensor:
    return aten._trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim)


def trilinear_cases() -> List[Case]:
    return [
        Case("_trilinear", [R(6, 3), R(5, 3, 4, seed=1), R(6, 4, seed=2)], BILINEAR,
             ref=_trilinear),
        Case("_trilinear", [NC(R(4, 3, dtype=F64)), R(2, 3, 5, dtype=F64, seed=1),
                            R(4, 5, dtype=F64, seed=2)], {**BILINEAR, "unroll_dim": 0},
             ref=_trilinear),
        Case("_trilinear", [R(3, 2, dtype=torch.int64), R(2, 2, 2, dtype=torch.int64, seed=1),
                            R(3, 2, dtype=torch.int64, seed=2)], BILINEAR, ref=_trilinear),
        # [2, 3] x [3, 4] x [4]: sum over 3 (i3 lacks it) and 4.
        Case("_trilinear", [R(2, 3, seed=3), R(3, 4, seed=4), R(4, seed=5)],
             {"expand1": [2], "expand2": [0], "expand3": [0, 1], "sumdim": [1, 2]},
             ref=_trilinear),
        # no sum: the product; i2's size-1 dim broadcasts.
        Case("_trilinear", [R(3, 4, dtype=F64, seed=6), R(1, 4, dtype=F64, seed=7),
                            R(3, 4, dtype=F64, seed=8)],
             {"expand1": [], "expand2": [], "expand3": [], "sumdim": []}, ref=_trilinear),
    ]


def _aa(x: torch.Tensor, output_size: List[int], align_corners: bool = False,
        scales_h: Optional[float] = None, scales_w: Optional[float] = None) -> torch.Tensor:
    return aten._upsample_bilinear2d_aa(x, output_size, align_corners, scales_h, scales_w)


def _aa_backward(g: torch.Tensor, output_size: List[int], input_size: List[int],
                 align_corners: bool = False, scales_h: Optional[float] = None,
                 scales_w: Optional[float] = None) -> torch.Tensor:
    return aten._upsample_bilinear2d_aa_backward(g, output_size, input_size, align_corners,
                                                 scales_h, scales_w)


def upsample_aa_cases() -> List[Case]:
    fwd = [(R(2, 3, 10, 12), {"output_size": [3, 5]}),
           (R(1, 2, 5, 6, dtype=F64, seed=1), {"output_size": [13, 4], "align_corners": True}),
           (R(1, 2, 9, 8, seed=2), {"output_size": [4, 7], "scales_h": 0.45, "scales_w": 0.9}),
           (R(2, 1, 6, 7, dtype=F64, seed=3),
            {"output_size": [6, 3], "align_corners": True, "scales_w": 0.5}),  # H unchanged
           (NC(R(3, 2, 8, 8, seed=4)), {"output_size": [5, 11]})]
    c = [Case("_upsample_bilinear2d_aa", [x], kw, ref=_aa) for x, kw in fwd]
    for shape, kw, dtype in (((2, 3, 10, 12), {"output_size": [3, 5]}, torch.float32),
                             ((1, 2, 5, 6), {"output_size": [13, 4], "align_corners": True},
                              F64),
                             ((1, 2, 9, 8), {"output_size": [4, 7], "scales_h": 0.45,
                                             "scales_w": 0.9}, F64)):
        g = R(shape[0], shape[1], *kw["output_size"], dtype=dtype, seed=5)
        c.append(Case("_upsample_bilinear2d_aa_backward", [g], {**kw, "input_size": list(shape)},
                      ref=_aa_backward))
    return c


def _points(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    return R(*shape, dtype=dtype, seed=seed) * 2


def _bin_edges(x: torch.Tensor, w: Optional[torch.Tensor] = None, *, bins: List[int],
               range: Any = None, density: bool = False) -> tuple:  # noqa: A002
    return tuple(aten._histogramdd_bin_edges(x, bins, range=range, weight=w, density=density))


def _from_cts(x: torch.Tensor, w: Optional[torch.Tensor] = None, *, bins: List[int],
              range: Any = None, density: bool = False) -> torch.Tensor:  # noqa: A002
    return aten._histogramdd_from_bin_cts(x, bins, range=range, weight=w, density=density)


def _tensors_ref(dims: int) -> Any:
    def ref(x: torch.Tensor, *rest: torch.Tensor, density: bool = False) -> torch.Tensor:
        w = rest[dims] if len(rest) > dims else None
        return aten._histogramdd_from_bin_tensors(x, list(rest[:dims]), weight=w,
                                                  density=density)
    return ref


def _sorted_edges(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    return torch.sort(R(n, dtype=F64, seed=seed) * 2).values.to(dtype)


def histogramdd_cases() -> List[Case]:
    c = []
    for kw, dt in (({"bins": [3, 2]}, torch.float32),
                   ({"bins": [4, 1, 2], "range": [-1.0, 1.0, 0.0, 2.0, -3.0, 3.0]}, F64)):
        d = len(kw["bins"])
        x = _points(20, d, dtype=dt, seed=d)
        c += [Case("_histogramdd_bin_edges", [x], kw, ref=_bin_edges, nout=d),
              Case("_histogramdd_from_bin_cts", [x], kw, ref=_from_cts),
              Case("_histogramdd_from_bin_cts", [x, R(20, dtype=dt, lo=0.1, seed=9)],
                   {**kw, "density": True}, ref=_from_cts)]
    c.append(Case("_histogramdd_from_bin_cts", [NC(_points(2, 7, 3, seed=5))],
                  {"bins": [2, 3, 4]}, ref=_from_cts))
    x = _points(4, 6, 2, dtype=F64, seed=6)
    edges = [_sorted_edges(4, F64, 7), _sorted_edges(3, F64, 8)]
    c += [Case("_histogramdd_from_bin_tensors", [x, *edges], ref=_tensors_ref(2)),
          Case("_histogramdd_from_bin_tensors", [x, *edges, R(4, 6, dtype=F64, lo=0.1)],
               {"density": True}, ref=_tensors_ref(2)),
          Case("_histogramdd_from_bin_tensors",
               [_points(30, 1, seed=9), _sorted_edges(6, torch.float32, 10)],
               ref=_tensors_ref(1))]
    return c


def resample_cases() -> List[Case]:
    return trilinear_cases() + upsample_aa_cases() + histogramdd_cases()


# The rows without a CUDA kernel (KnownCpuOnly of runtime/ops/known_cpu_only.cc).
CPU_ONLY = {"_upsample_bilinear2d_aa", "_upsample_bilinear2d_aa_backward",
            "_histogramdd_bin_edges", "_histogramdd_from_bin_cts",
            "_histogramdd_from_bin_tensors"}
