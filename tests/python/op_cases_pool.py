"""The adaptive max pools, the 3-d and adaptive indices backwards, avg_pool2d's
divisor_override and the 3-d average pools as op_cases.py's reference cases: values and indices
against torch's (ties and NaNs exactly, ``_exact``), gradients through
test_autograd_reference.py."""

from __future__ import annotations

from typing import Any, List

import torch
import torch.nn.functional as F

from op_case_inputs import NC, Case, R
from op_cases_nn import _exact, _pool_grad, _ties

aten = torch.ops.aten


def _adaptive2(x: torch.Tensor, output_size: Any) -> tuple:
    return F.adaptive_max_pool2d(x, output_size, return_indices=True)


def _adaptive3(x: torch.Tensor, output_size: Any) -> tuple:
    return F.adaptive_max_pool3d(x, output_size, return_indices=True)


def _adaptive_backward_args(x: torch.Tensor, output_size: Any) -> list:
    """adaptive_max_pool{2,3}d_backward's (grad_output, self, indices) with torch's indices."""
    pool = _adaptive2 if len(output_size) == 2 else _adaptive3
    idx = pool(x, output_size)[1]
    return [R(*idx.shape, seed=1, dtype=x.dtype), x, idx]


def _triple(v: Any) -> List[int]:
    return [v] * 3 if isinstance(v, int) else list(v)


def _max_pool3d_backward_args(x: torch.Tensor, **kw: Any) -> list:
    idx = F.max_pool3d(x, return_indices=True, **kw)[1]
    return [R(*idx.shape, seed=1, dtype=x.dtype), x, idx]


def _max_pool3d_backward(g: torch.Tensor, x: torch.Tensor, idx: torch.Tensor, kernel_size: Any,
                         stride: Any = (), padding: Any = 0, dilation: Any = 1,
                         ceil_mode: bool = False) -> torch.Tensor:
    return aten.max_pool3d_with_indices_backward(
        g, x, _triple(kernel_size), _triple(stride) if stride else [], _triple(padding),
        _triple(dilation), ceil_mode, idx)


_AVG3D = {"kernel_size": (2, 3, 4), "stride": (1, 2, 2), "padding": (0, 1, 2), "ceil_mode": True,
          "divisor_override": 2}


def pool_cases() -> List[Case]:
    return [
        # Windows [floor(i in / out), ceil((i + 1) in / out)): non-divisible sizes, outputs
        # larger than the input, unbatched, non-contiguous; ties and NaNs exactly torch's.
        Case("adaptive_max_pool2d", [R(2, 3, 7, 11)], {"output_size": (4, 5)}, ref=_adaptive2,
             nout=2),
        Case("adaptive_max_pool2d", [NC(R(3, 4, 10))], {"output_size": (8, 5)}, ref=_adaptive2,
             nout=2),
        Case("adaptive_max_pool2d", [R(2, 3, 6, 5, dtype=torch.float64)], {"output_size": (1, 1)},
             ref=_adaptive2, nout=2),
        Case("adaptive_max_pool2d", [_ties(2, 3, 9, 7, nans=True)], {"output_size": (4, 3)},
             ref=_adaptive2, nout=2, check=_exact),
        Case("adaptive_max_pool3d", [R(2, 3, 5, 4, 7, dtype=torch.float64)],
             {"output_size": (3, 2, 4)}, ref=_adaptive3, nout=2),
        Case("adaptive_max_pool3d", [NC(R(3, 4, 3, 5))], {"output_size": (5, 2, 7)},
             ref=_adaptive3, nout=2),
        Case("adaptive_max_pool3d", [_ties(2, 3, 4, 5, 6, nans=True)], {"output_size": (3, 2, 4)},
             ref=_adaptive3, nout=2, check=_exact),
        Case("adaptive_max_pool2d_backward", _adaptive_backward_args(R(2, 3, 7, 11), (4, 5)),
             ref=aten.adaptive_max_pool2d_backward),
        Case("adaptive_max_pool2d_backward",
             _adaptive_backward_args(R(3, 4, 5, dtype=torch.float64), (7, 2)),
             ref=aten.adaptive_max_pool2d_backward),
        Case("adaptive_max_pool3d_backward",
             _adaptive_backward_args(R(2, 3, 5, 4, 7, dtype=torch.float64), (3, 2, 4)),
             ref=aten.adaptive_max_pool3d_backward),
        Case("adaptive_max_pool3d_backward", _adaptive_backward_args(R(3, 4, 3, 5), (5, 2, 7)),
             ref=aten.adaptive_max_pool3d_backward),
        # At torch's indices: overlapping, padded, dilated, ceil-mode windows; unbatched.
        Case("max_pool3d_with_indices_backward",
             _max_pool3d_backward_args(R(2, 3, 5, 6, 7), kernel_size=3, stride=2, padding=1),
             {"kernel_size": 3, "stride": 2, "padding": 1}, ref=_max_pool3d_backward),
        Case("max_pool3d_with_indices_backward",
             _max_pool3d_backward_args(R(3, 5, 6, 7, dtype=torch.float64), kernel_size=(2, 3, 2),
                                       stride=1, dilation=(2, 1, 1), ceil_mode=True),
             {"kernel_size": (2, 3, 2), "stride": 1, "dilation": (2, 1, 1), "ceil_mode": True},
             ref=_max_pool3d_backward),
        # divisor_override (any non-zero int) in place of every window's count.
        Case("avg_pool2d", [R(1, 3, 9, 9)], {"kernel_size": (4, 4), "stride": (2, 3), "padding": 1,
                                             "ceil_mode": True, "count_include_pad": False,
                                             "divisor_override": 2}, ref=F.avg_pool2d),
        Case("avg_pool2d", [R(3, 4, 4)], {"kernel_size": 2, "divisor_override": -2},
             ref=F.avg_pool2d),
        Case("avg_pool2d", [R(2, 3, 7, 7, dtype=torch.int64)],
             {"kernel_size": 3, "stride": 2, "padding": 1, "divisor_override": -4},
             ref=F.avg_pool2d),
        Case("avg_pool2d_backward", [R(1, 2, 3, 3), R(1, 2, 5, 5)],
             {"kernel_size": (3,), "stride": (2,), "padding": (1,), "ceil_mode": True,
              "divisor_override": 3},
             ref=lambda g, x, **k: _pool_grad(F.avg_pool2d, g, x, **k)),
        # 3-d average pools: every form, batched and unbatched; int64 truncates.
        Case("avg_pool3d", [R(1, 2, 5, 5, 5)], _AVG3D, ref=F.avg_pool3d),
        Case("avg_pool3d", [NC(R(2, 4, 6, 5))], {"kernel_size": 2, "padding": 1,
                                                 "count_include_pad": False},
             ref=F.avg_pool3d),
        Case("avg_pool3d", [R(1, 1, 7, 5, 7, dtype=torch.float64)],
             {"kernel_size": (6, 3, 4), "stride": (2, 3, 2), "padding": (3, 1, 0),
              "count_include_pad": False, "divisor_override": -2}, ref=F.avg_pool3d),
        Case("avg_pool3d", [R(1, 2, 4, 4, 4, dtype=torch.int64)],
             {"kernel_size": 2, "stride": 1, "padding": 1, "ceil_mode": True}, ref=F.avg_pool3d),
        Case("avg_pool3d_backward", [R(1, 2, 4, 3, 4), R(1, 2, 5, 5, 5)], _AVG3D,
             ref=lambda g, x, **k: _pool_grad(F.avg_pool3d, g, x, **k)),
        Case("adaptive_avg_pool3d", [R(2, 3, 5, 4, 7)], {"output_size": (3, 2, 4)},
             ref=F.adaptive_avg_pool3d),
        Case("adaptive_avg_pool3d", [NC(R(3, 4, 3, 5, dtype=torch.float64))],
             {"output_size": (5, 2, 7)}, ref=F.adaptive_avg_pool3d),
        Case("adaptive_avg_pool3d_backward", [R(2, 3, 3, 2, 4), R(2, 3, 5, 4, 7)],
             ref=lambda g, x: _pool_grad(F.adaptive_avg_pool3d, g, x, output_size=(3, 2, 4))),
    ]
