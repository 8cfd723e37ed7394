"""Output metadata from PyTorch's own meta functions, on the client: no op waits for the daemon.

``run(func, args, kwargs)`` runs ``func`` on meta tensors standing for the tensord ones (same
sizes, strides, dtype); a bad call raises PyTorch's own error here, at the program's line.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_map

from ._tensor import TensordTensor

_META = torch.device("meta")


def to_meta(x: Any) -> Any:
    if isinstance(x, TensordTensor):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=_META)
    if isinstance(x, torch.device) and x.type == "tensord":
        return _META
    if isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dim() == 0:
        return x  # a CPU scalar tensor mixes with any device, as in PyTorch
    return x


def run(func: Any, args: Any, kwargs: Any) -> Any:
    """``func``'s outputs on meta tensors (a tensor, a tuple/list of them, or a non-tensor)."""
    margs, mkwargs = tree_map(to_meta, (args, kwargs))
    return func(*margs, **mkwargs)
