"""The case type of op_cases.py and its input makers: ``Case`` (a daemon op, its arguments
and attributes, its torch reference), ``NC`` (a non-contiguous daemon tensor), ``R`` and ``I``
(seeded float/int/bool tensors and int64 indices: the same values whoever builds them)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional

import torch


class NC(NamedTuple):
    """A tensor the daemon should hold non-contiguously (a transposed view)."""
    t: torch.Tensor


class Case(NamedTuple):
    op: str
    args: List[Any]
    kwargs: Dict[str, Any] = {}
    ref: Optional[Callable[..., Any]] = None  # torch(*args, **kwargs); default torch.<op>
    nout: Optional[int] = None  # for ops whose output count depends on attributes
    check: Optional[Callable[[Any, Any], None]] = None  # custom comparison (random ops)
    rtol: Optional[float] = None


#: pairs of shapes that broadcast (same, expanded, 0-dim either side, empty)
BROADCAST_SHAPES = [((3, 4), (3, 4)), ((2, 1, 4), (3, 1)), ((), (3,)), ((2, 3), ()),
                    ((0, 3), (3,))]


def R(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0, lo: float = None) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed * 131 + len(shape) * 7 + sum(shape))
    if dtype.is_floating_point:
        t = torch.randn(shape, generator=g, dtype=torch.float64)
        if lo is not None:
            t = t.abs() + lo
        return t.to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    low = 0 if dtype == torch.uint8 else -9
    return torch.randint(low, 10, shape, generator=g).to(dtype)


def I(*shape: int, high: int, seed: int = 0) -> torch.Tensor:  # noqa: E743 (int64 indices)
    g = torch.Generator().manual_seed(seed + 99)
    return torch.randint(0, high, shape, generator=g)
