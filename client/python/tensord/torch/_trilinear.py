"""``torch.nn.functional.bilinear``'s op, ``_trilinear``, as the daemon's composite row of the
same name (runtime/ops/trilinear_ops.cc: ATen's sum-products, a bmm per pair). PyTorch's autograd
formula for it calls ``_trilinear`` again with the expand and sum lists swapped, so the gradients
of all three inputs run on the daemon too. Mixed dtypes and bool (which the daemon's bmm refuses)
decline to PyTorch's CPU kernel."""

from __future__ import annotations

from typing import Any, Sequence

import torch

from ._aten_map import c, rule

aten = torch.ops.aten


@rule(aten._trilinear.default)
def _trilinear(i1: Any, i2: Any, i3: Any, expand1: Sequence[int], expand2: Sequence[int],
               expand3: Sequence[int], sumdim: Sequence[int], unroll_dim: int = 1) -> Any:
    if i1.dtype != i2.dtype or i1.dtype != i3.dtype or i1.dtype.name == "bool":
        return NotImplemented
    return c("_trilinear", [i1, i2, i3], expand1=[int(d) for d in expand1],
             expand2=[int(d) for d in expand2], expand3=[int(d) for d in expand3],
             sumdim=[int(d) for d in sumdim], unroll_dim=int(unroll_dim))
