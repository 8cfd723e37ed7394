"""Reference cases of the distance rows (cdist, pdist and their backward rows) and histc, for
test_ops_reference.py (values) and test_autograd_reference.py (gradients of cdist and pdist,
against torch and float64 finite differences)."""

from __future__ import annotations

import math
from typing import List

import torch

from op_case_inputs import NC, Case, R

F64 = torch.float64


def _cdist_backward(g: torch.Tensor, a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                    p: float) -> torch.Tensor:
    return torch.ops.aten._cdist_backward(g, a, b, p, d)


def _pdist_backward(g: torch.Tensor, x: torch.Tensor, d: torch.Tensor,
                    p: float) -> torch.Tensor:
    return torch.ops.aten._pdist_backward(g, x, p, d)


def distance_cases() -> List[Case]:
    c = [Case("cdist", [R(3, 4), R(5, 4, seed=1)], {"p": 2.0}),
         Case("cdist", [R(2, 1, 3, 4), R(5, 2, 4, seed=1)], {"p": 1.0}),
         Case("cdist", [NC(R(4, 3)), R(2, 5, 3, seed=2)], {"p": 0.5}),
         Case("cdist", [R(3, 4, dtype=F64), R(2, 4, dtype=F64, seed=1)], {"p": 3.0}),
         Case("cdist", [R(3, 4), R(5, 4, seed=1)], {"p": math.inf}),
         Case("cdist", [R(3, 4), R(5, 4, seed=1)], {"p": 0.0}),
         Case("cdist", [R(0, 4), R(5, 4, seed=1)], {"p": 2.0}),
         Case("pdist", [R(5, 3)], {"p": 2.0}),
         Case("pdist", [NC(R(3, 6))], {"p": 1.5}),
         Case("pdist", [R(4, 2, dtype=F64)], {"p": math.inf}),
         Case("pdist", [R(1, 2)], {"p": 2.0}),
         Case("histc", [R(6, 7) * 2], {"bins": 9}),
         Case("histc", [NC(R(4, 5, dtype=F64))], {"bins": 4, "min": -1.0, "max": 1.0}),
         Case("histc", [R(0)], {"bins": 3})]
    for p in (1.0, 2.0, math.inf, 2.5):
        a, b = R(3, 4, dtype=F64), R(2, 4, dtype=F64, seed=1)
        d = torch.cdist(a, b, p=p)
        c.append(Case("_cdist_backward", [R(3, 2, dtype=F64, seed=2), a, b, d], {"p": p},
                      ref=_cdist_backward))
        x = R(4, 3, dtype=F64, seed=3)
        c.append(Case("_pdist_backward", [R(6, dtype=F64, seed=4), x,
                                          torch.pdist(x, p=p)], {"p": p},
                      ref=_pdist_backward))
    return c
