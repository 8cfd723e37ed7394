"""Reference cases of the one-dim scan rows (runtime/ops/scan_ops.cc): cummax/cummin,
logcumsumexp, mode and searchsorted, for test_ops_reference.py (values, on every device) and
test_autograd_reference.py (gradients of cummax/cummin/logcumsumexp/mode against PyTorch and
finite differences in float64). Inputs with ties, NaN or infinities carry a ``check`` (their
values are compared exactly; a finite difference across a tie or an infinity means nothing), so
the gradient suites take only the random ones."""

from __future__ import annotations

import math
from typing import Any, List

import numpy as np
import torch

from op_case_inputs import NC, Case, R

F64 = torch.float64
NAN, INF = math.nan, math.inf


def _exact(got: Any, want: Any) -> None:
    """Values and indices as PyTorch's, NaN where PyTorch has NaN."""
    got = got if isinstance(got, tuple) else (got,)
    want = tuple(want) if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape), (g.shape, w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, equal_nan=True)


def _small_ints(*shape: int, high: int = 3, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed + 7)
    return torch.randint(0, high, shape, generator=g)


def _sorted(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    return torch.sort(R(*shape, dtype=dtype, seed=seed), dim=-1)[0]


def _searchsorted_with_sorter(b: torch.Tensor, v: Any, s: torch.Tensor, **k: Any) -> Any:
    return torch.searchsorted(b, v, sorter=s, **k)


def scan_cases() -> List[Case]:
    ties = torch.tensor([[1., 3., 3., NAN, 2., NAN], [-INF, 5., 5., -1., INF, 5.]])
    c: List[Case] = []
    for op in ("cummax", "cummin"):
        c += [Case(op, [R(3, 4)], {"dim": 1}, nout=2),
              Case(op, [NC(R(4, 3))], {"dim": 0}, nout=2),
              Case(op, [R(2, 3, 4, dtype=F64)], {"dim": -2}, nout=2),
              Case(op, [R(9, dtype=torch.int64)], {"dim": 0}, nout=2),
              Case(op, [_small_ints(4, 7)], {"dim": 1}, nout=2),
              Case(op, [R(4, 7, dtype=torch.bool)], {"dim": -1}, nout=2),
              Case(op, [R()], {"dim": 0}, nout=2),
              Case(op, [R(0, 3)], {"dim": 1}, nout=2),
              Case(op, [ties], {"dim": 1}, nout=2, check=_exact)]
    infs = torch.tensor([[-INF, -INF, 0., 1.], [INF, 1., -INF, 2.], [NAN, 0., 1., 2.]])
    c += [Case("logcumsumexp", [R(3, 4)], {"dim": 1}),
          Case("logcumsumexp", [NC(R(4, 3))], {"dim": 0}),
          Case("logcumsumexp", [R(2, 3, 4, dtype=F64)], {"dim": -1}),
          Case("logcumsumexp", [R(5) * 30], {"dim": 0}),
          Case("logcumsumexp", [R()], {"dim": -1}),
          Case("logcumsumexp", [R(0, 3)], {"dim": 0}),
          Case("logcumsumexp", [infs], {"dim": 1}, check=_exact)]
    c += [Case("mode", [R(3, 5)], nout=2),
          Case("mode", [NC(R(4, 6))], {"dim": 0, "keepdim": True}, nout=2),
          Case("mode", [R(2, 3, 4, dtype=F64)], {"dim": 1}, nout=2),
          Case("mode", [_small_ints(5, 8)], {"dim": 1}, nout=2),
          Case("mode", [NC(_small_ints(9, 4, seed=1))], {"dim": 0}, nout=2),
          Case("mode", [R(3, 7, dtype=torch.bool)], {"dim": -1, "keepdim": True}, nout=2),
          Case("mode", [R()], nout=2),
          Case("mode", [R(0, 3)], {"dim": 1}, nout=2),
          Case("mode", [_small_ints(4, 6, seed=2).double()], {"dim": 1}, nout=2, check=_exact)]
    bd = _sorted(7)
    c += [Case("searchsorted", [bd, R(3, 4, seed=1)]),
          Case("searchsorted", [bd, R(3, 4, seed=1)], {"right": True}),
          Case("searchsorted", [bd, NC(R(4, 3, seed=1))], {"side": "right", "out_int32": True}),
          Case("searchsorted", [_sorted(3, 6), R(3, 4, seed=2)]),
          Case("searchsorted", [_sorted(3, 6, dtype=torch.int64), R(3, 4, dtype=torch.int64)],
               {"right": True}),
          Case("searchsorted", [torch.tensor([0, 1, 1, 1, 3]), torch.tensor([1, 2, -1, 3, 4])]),
          Case("searchsorted", [bd, R(5, dtype=torch.int64)]),
          Case("searchsorted", [bd, 0.25]),
          Case("searchsorted", [bd, R()]),
          Case("searchsorted", [torch.tensor([1., 2., NAN]), torch.tensor([NAN, 1.5, 3.])]),
          Case("searchsorted", [R(0), R(3)]),
          Case("searchsorted", [R(6, seed=3), R(4, seed=4), torch.argsort(R(6, seed=3))],
               {"right": True}, ref=_searchsorted_with_sorter),
          Case("searchsorted", [R(2, 5, seed=5), R(2, 3), torch.argsort(R(2, 5, seed=5))],
               ref=_searchsorted_with_sorter)]
    return c
