"""Advanced indexing with integer index tensors (``x[i, j]``, ``x[:, i, :, j]``,
``x[i, j] = v``, ``x.index_put_((i, j), v, accumulate=True)``) as the daemon's one-index ops.

Note [Linearised indices]: the indexed dims are moved to the front and flattened into one, and
the index tensors (broadcast together, negative ones wrapped) become one linear index into it,
so ``aten.index.Tensor`` is ``index_select`` along dim 0 and ``aten.index_put`` the daemon's
``index_put`` along dim 0. PyTorch's result layout follows: the broadcast index shape takes the
place of the indexed dims when they are adjacent, else it comes first. Boolean masks have a
data-dependent result size: ``index`` turns them into integer indices with ``nonzero`` first
(one wait, as PyTorch does on CUDA); ``index_put`` keeps the daemon's mask rule
(``_aten_map_nn._index_put``) where it applies, and expands the masks the same way elsewhere. What PyTorch's autograd asks for ``index``'s gradient is
``index_put`` with ``accumulate=True``, so both directions run on the daemon.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch

from ._special import _handles

aten = torch.ops.aten


def _plan(x: Any, indices: List[Optional[Any]]) -> Optional[Tuple[Any, list, list, Any, bool]]:
    """(x with the indexed dims first, indexed dims, other dims, linear index, adjacent) or
    None when an index is not an integer tensor on the device."""
    dims = [d for d, t in enumerate(indices) if t is not None]
    if not dims or any(indices[d].dtype in (torch.bool, torch.uint8)
                       or indices[d].dtype.is_floating_point for d in dims):
        return None
    idx = [indices[d] if isinstance(indices[d], type(x)) else indices[d].to(x.device)
           for d in dims]
    idx = torch.broadcast_tensors(*idx)
    rest = [d for d in range(x.dim()) if d not in dims]
    lin = None
    for d, t in zip(dims, idx):
        n = x.shape[d]
        t = t.long()
        t = torch.where(t < 0, t + n, t)
        lin = t if lin is None else lin * n + t
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    return x.permute(dims + rest), dims, rest, lin, adjacent


def _prod(x: Any, dims: List[int]) -> int:
    n = 1
    for d in dims:
        n *= x.shape[d]
    return n


def _expand_masks(x: Any, indices: List[Optional[Any]]) -> Optional[List[Optional[Any]]]:
    """The indices with each boolean (or uint8) mask replaced by the integer indices of its
    true elements, one per dim it covers (PyTorch's ``expandTensors``: ``nonzero``, the one
    wait, as on CUDA); None for a 0-d mask (left to the fallback)."""
    out: List[Optional[Any]] = []
    for t in indices:
        if t is None or t.dtype not in (torch.bool, torch.uint8):
            out.append(t)
            continue
        if t.dim() == 0:
            return None
        d = len(out)
        for j in range(t.dim()):
            if d + j >= x.dim() or t.shape[j] != x.shape[d + j]:
                raise IndexError(f"The shape of the mask {list(t.shape)} at index {j} does not "
                                 f"match the shape of the indexed tensor {list(x.shape)} at "
                                 f"index {d + j}")
        nz = t.nonzero()
        out.extend(nz.select(1, j) for j in range(t.dim()))
    return out


@_handles(aten.index.Tensor)
def index(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    x, indices = args
    expanded = _expand_masks(x, list(indices))
    plan = _plan(x, expanded) if expanded is not None else None
    if plan is None:
        from ._fallback import run
        return run(func, args, kwargs)
    front, dims, rest, lin, adjacent = plan
    rest_sizes = [x.shape[d] for d in rest]
    flat = front.reshape([_prod(x, dims)] + rest_sizes)  # (-1 is ambiguous when empty)
    picked = flat.index_select(0, lin.reshape(lin.numel())).reshape(list(lin.shape) + rest_sizes)
    if adjacent and dims[0] > 0:  # the index shape takes the indexed dims' place
        b, k = lin.dim(), dims[0]
        picked = picked.permute(list(range(b, b + k)) + list(range(b))
                                + list(range(b + k, picked.dim())))
    return picked.contiguous()


def _index_put_int(x: Any, indices: List[Optional[Any]], values: Any,
                   accumulate: bool) -> Optional[Any]:
    plan = _plan(x, indices)
    if plan is None:
        return None
    front, dims, rest, lin, adjacent = plan
    rest_sizes = [x.shape[d] for d in rest]
    b = lin.dim()
    # values broadcast to the indexing result's shape, then laid out as [*B, *rest]
    if adjacent and dims[0] > 0:
        k = dims[0]
        shape = rest_sizes[:k] + list(lin.shape) + rest_sizes[k:]
        v = values.expand(shape)
        v = v.permute(list(range(k, k + b)) + list(range(k)) + list(range(k + b, len(shape))))
    else:
        v = values.expand(list(lin.shape) + rest_sizes)
    v = v.reshape([lin.numel()] + rest_sizes).to(x.dtype)
    flat = front.reshape([_prod(x, dims)] + rest_sizes)
    out = aten.index_put.default(flat, [lin.reshape(lin.numel())], v, accumulate)
    sizes = [x.shape[d] for d in dims] + rest_sizes
    inverse = [0] * x.dim()
    for pos, d in enumerate(dims + rest):
        inverse[d] = pos
    return out.reshape(sizes).permute(inverse).contiguous()


@_handles(aten.index_put.default, aten.index_put_.default)
def index_put(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    from . import _aten_map, _dispatch
    x, indices, values = args[:3]
    accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
    inplace = func is aten.index_put_.default
    given = [t for t in indices if t is not None]
    one_dim0 = len(indices) == 1 and given and given[0].dim() == 1
    out = None
    if given and not one_dim0 and isinstance(values, type(x)):
        out = _index_put_int(x, list(indices), values, bool(accumulate))
    if out is None:  # one index along dim 0, or a mask: the daemon's row (or the fallback)
        functional = aten.index_put.default
        out = _dispatch.run_rule(functional, _aten_map.RULES[functional],
                                 (x, indices, values, accumulate), {})
        if out is NotImplemented and isinstance(values, type(x)):  # a value per true element
            expanded = _expand_masks(x, list(indices))
            out = _index_put_int(x, expanded, values, bool(accumulate)) if expanded else None
        if out is NotImplemented or out is None:
            from ._fallback import run
            return run(func, args, kwargs)
    if inplace:
        _dispatch.assign(x, _dispatch.payload(out))
        return x
    return out
