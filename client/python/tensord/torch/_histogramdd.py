"""``torch.histogramdd`` on the daemon's rows of the same names as ATen's ops
(runtime/ops/histogramdd_ops.cc): ``_histogramdd_bin_edges`` (one edges tensor per dim),
``_histogramdd_from_bin_cts`` and ``_histogramdd_from_bin_tensors``. The optional weight is the
rows' last input, the edge tensors come between the input and it. CPU-only, float32/float64: on
a CUDA daemon, and in other dtypes, a rule declines and PyTorch's CPU kernel runs (a counted
fallback)."""

from __future__ import annotations

from typing import Any, Sequence

import torch

from .._tensor import call as native_call
from ._aten_map import c, rule
from ._aten_map_nn import _fused_rows

aten = torch.ops.aten
_FLOATS = ("float32", "float64")


def _native(*tensors: Any) -> bool:
    return all(t.dtype.name in _FLOATS for t in tensors if t is not None) and _fused_rows()


def _count_attrs(bins: Sequence[int], range: Any, density: bool) -> dict:  # noqa: A002
    a = dict(bins=[int(b) for b in bins], density=bool(density))
    if range is not None:
        a["range"] = [float(r) for r in range]
    return a


@rule(aten._histogramdd_bin_edges.default)
def _histogramdd_bin_edges(self: Any, bins: Sequence[int], *, range: Any = None,  # noqa: A002
                           weight: Any = None, density: bool = False) -> Any:
    if not _native(self, weight):
        return NotImplemented
    ins = [self] + ([] if weight is None else [weight])
    out = native_call("_histogramdd_bin_edges", ins, _count_attrs(bins, range, density),
                      num_outputs=len(bins))
    return list(out) if isinstance(out, tuple) else [out]


@rule(aten._histogramdd_from_bin_cts.default)
def _histogramdd_from_bin_cts(self: Any, bins: Sequence[int], *, range: Any = None,  # noqa: A002
                              weight: Any = None, density: bool = False) -> Any:
    if not _native(self, weight):
        return NotImplemented
    ins = [self] + ([] if weight is None else [weight])
    return c("_histogramdd_from_bin_cts", ins, **_count_attrs(bins, range, density))


@rule(aten._histogramdd_from_bin_tensors.default)
def _histogramdd_from_bin_tensors(self: Any, bins: Sequence[Any], *, weight: Any = None,
                                  density: bool = False) -> Any:
    if not _native(self, weight, *bins):
        return NotImplemented
    ins = [self, *bins] + ([] if weight is None else [weight])
    return c("_histogramdd_from_bin_tensors", ins, density=bool(density))
