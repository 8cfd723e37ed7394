"""``torch.histogram`` (``histogram.bin_ct`` and ``histogram.bins_tensor``) on the daemon, as
PyTorch's CPU kernel bins (histogramdd's, one dimension), written with the daemon's rows.

- The outer edges: ``range``, else the data's extremes (one read of both; NaN or inf there is
  PyTorch's error), else (0, 1) for an empty input; an empty range widens by 0.5 each way. The
  ``bins + 1`` edges are PyTorch's own ``linspace`` on the client, uploaded (they are an output).
- An element's bin (``bin_ct``): the linear estimate ``(x - left) * bins / (right - left)`` in
  the input's dtype, corrected against the edges one bin either way (PyTorch's local search);
  (``bins_tensor``): the number of edges at or below it, less one (its binary search: a
  comparison with every edge). Elements outside the edges (NaN too) count nowhere; the last bin
  includes its right edge.
- Counts (or weights) are added with ``scatter_add``; ``density`` divides by their sum and by
  each bin's width, in PyTorch's order.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Sequence

import torch

from . import _connection, _transfer
from ._data_sized import _fresh, _payload, bind
from ._aten_map import c
from ._special import _handles

aten = torch.ops.aten
_INT64 = _transfer.native_dtype(torch.int64)


def _outer_edges(x: Any, flat: Any, rng: Optional[Sequence[float]]) -> tuple:
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
    elif x.numel() > 0:
        ends = c("cat", [c("reshape", [c("amin", [flat])], shape=[1]),
                         c("reshape", [c("amax", [flat])], shape=[1])], dim=0)
        lo, hi = _transfer.download(ends, x.dtype).double().tolist()
    else:
        lo, hi = 0.0, 1.0
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension 0's range [{lo}, {hi}] is not finite")
    if lo > hi:
        raise RuntimeError("torch.histogramdd: min should not exceed max, but got min "
                           f"{lo} max {hi} for dimension 0")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _count(x: Any, flat: Any, pos: Any, inside: Any, weight: Any, density: bool,
           edges: torch.Tensor, edges_p: Any) -> tuple:
    """(hist, bin_edges) from each element's bin ``pos`` (int64) and whether it counts."""
    bins = edges.numel() - 1
    pos = c("where", [c("eq", [pos, bins]), bins - 1, pos])  # the last bin includes its edge
    pos = c("clamp", [c("where", [inside, pos, 0])], min=0, max=max(bins - 1, 0))
    nd = _transfer.native_dtype(x.dtype)
    w = c("ones", [], shape=[x.numel()], dtype=nd) if weight is None else \
        c("reshape", [_payload(weight)], shape=[-1])
    w = c("where", [inside, w, 0.0])
    hist = c("scatter_add", [c("zeros", [], shape=[bins], dtype=nd), pos, w], dim=0)
    if density:
        hist = c("div", [hist, c("sum", [hist])])
        widths = c("sub", [c("narrow", [edges_p], dim=0, start=1, length=bins),
                           c("narrow", [edges_p], dim=0, start=0, length=bins)])
        hist = c("div", [hist, widths])
    return (_fresh(c("contiguous", [hist]), (bins,), x.dtype),
            _fresh(edges_p, (bins + 1,), x.dtype))


def _upload(edges: torch.Tensor) -> Any:
    return _transfer.upload(_connection.session(), edges.contiguous())


@_handles(aten.histogram.bin_ct)
def histogram_bin_ct(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    a = bind(func, args, kwargs)
    x, bins = a["self"], int(a["bins"])
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    flat = c("reshape", [_payload(x)], shape=[-1])
    lo, hi = _outer_edges(x, flat, a["range"])
    edges = torch.linspace(lo, hi, bins + 1, dtype=x.dtype)  # PyTorch's own edges
    left, right = edges[0], edges[-1]
    width = float(right - left)  # in the dtype, as the kernel's division
    inside = c("logical_and", [c("ge", [flat, float(left)]), c("le", [flat, float(right)])])
    est = c("div", [c("mul", [c("sub", [flat, float(left)]), bins]), width])
    est = c("to", [c("where", [inside, est, 0.0])], dtype=_INT64)
    est = c("clamp", [est], min=0, max=bins)
    # upper_bound over edges[max(est-1, 0) : min(est+2, bins+1)], less one
    edges_p = _upload(edges)
    lo_k = c("clamp", [c("sub", [est, 1])], min=0)
    pos = c("sub", [lo_k, 1])
    for step in (-1, 0, 1):
        k = c("add", [est, step])
        valid = c("logical_and", [c("ge", [k, 0]), c("le", [k, bins])])
        e = c("index_select", [edges_p, c("clamp", [k], min=0, max=bins)], dim=0)
        hit = c("logical_and", [valid, c("le", [e, flat])])
        pos = c("add", [pos, c("to", [hit], dtype=_INT64)])
    return _count(x, flat, pos, inside, a["weight"], bool(a["density"]), edges, edges_p)


@_handles(aten.histogram.bins_tensor)
def histogram_bins_tensor(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """Each element compared with every edge: O(elements x edges) work and memory."""
    a = bind(func, args, kwargs)
    x, edges_t = a["self"], a["bins"]
    nb = edges_t.numel()
    edges_p = c("clone", [c("reshape", [_payload(edges_t)], shape=[-1])])
    edges = _transfer.download(edges_p, edges_t.dtype)  # the outer edges decide what counts
    flat = c("reshape", [_payload(x)], shape=[-1])
    inside = c("logical_and", [c("ge", [flat, float(edges[0])]),
                               c("le", [flat, float(edges[-1])])])
    below = c("le", [c("reshape", [edges_p], shape=[1, nb]),
                     c("reshape", [flat], shape=[-1, 1])])
    pos = c("sub", [c("sum", [below], dim=[1], dtype=_INT64), 1])
    return _count(x, flat, pos, inside, a["weight"], bool(a["density"]), edges, edges_p)
