"""The optimizers' composite foreach steps as foreach ops of one daemon Call per tensor:
``_foreach_addcmul_``, ``_foreach_addcdiv_`` (a number or a list of them) and
``_foreach_lerp_`` (a number weight), which Adam and AdamW's ``foreach`` step calls.

Per tensor, ``addcmul_``, ``addcdiv_`` and ``lerp_`` are composites of two or three device ops
(``_composites``: ATen's CPU kernels' order of operations), which a foreach call would run
tensor by tensor through the dispatch of each, and no plan can replay (Note [Foreach replay]:
a plan needs one Call per tensor). Here the same operations run as foreach ops over the whole
lists instead (``_foreach_mul``, ``_foreach_div``, ``_foreach_add_`` ...), each replayed by
its plan: the same values, in the same order, as the per-tensor composites compute. Lists of
other dtypes, or mixed ones, take the per-tensor path as before.
"""

from __future__ import annotations

from typing import Any, Dict, List

import torch

from . import _foreach
from ._special import _handles
from ._tensor import TensordTensor

aten = torch.ops.aten


def _run(func: Any, *args: Any, **kwargs: Any) -> Any:
    """``func`` (a foreach op) as the device runs it, without PyTorch's dispatcher again (this
    is below autograd already): its plan, or its per-tensor op on each tensor."""
    return _foreach.run_bound(func, args, kwargs)


def _same_float(*lists: Any) -> bool:
    """Tensord tensors of one floating dtype in every list, all of one length."""
    n = len(lists[0])
    if not n or any(len(xs) != n for xs in lists):
        return False
    dtypes = {(type(t), t.dtype) for xs in lists for t in xs}
    if len(dtypes) != 1:
        return False
    kind, dtype = dtypes.pop()
    return kind is TensordTensor and dtype.is_floating_point


def _numbers(scalars: Any) -> bool:
    return all(type(v) in (int, float) for v in scalars)


def _scaled(t1: List[Any], value: Any) -> Any:
    """``t1 * value`` per tensor (``t1`` itself where every value is 1, as ATen's kernels skip
    the product)."""
    if isinstance(value, (list, tuple)):
        if all(v == 1 for v in value):
            return t1
        return _run(aten._foreach_mul.ScalarList, t1, list(value))
    return t1 if value == 1 else _run(aten._foreach_mul.Scalar, t1, value)


@_handles(aten._foreach_addcmul_.Scalar, aten._foreach_addcmul_.ScalarList,
          aten._foreach_addcdiv_.Scalar, aten._foreach_addcdiv_.ScalarList)
def addc_(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    xs, t1, t2 = args[:3]
    value = args[3] if len(args) > 3 else kwargs.get("value", kwargs.get("scalars", 1))
    listed = isinstance(value, (list, tuple))
    if not _same_float(xs, t1, t2) or not (_numbers(value) if listed else
                                            type(value) in (int, float)):
        return _run(func, *args, **kwargs)
    if listed and len(value) != len(xs):
        return _run(func, *args, **kwargs)  # PyTorch's error
    # ATen: self + value * t1 * t2 (or / t2), in that order
    mul = func in (aten._foreach_addcmul_.Scalar, aten._foreach_addcmul_.ScalarList)
    terms = _run(aten._foreach_mul.List if mul else aten._foreach_div.List, _scaled(t1, value),
                 t2)
    _run(aten._foreach_add_.List, xs, terms)
    return None


@_handles(aten._foreach_lerp_.Scalar)
def lerp_(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    starts, ends = args[:2]
    weight = args[2] if len(args) > 2 else kwargs["weight"]
    if not _same_float(starts, ends) or type(weight) not in (int, float):
        return _run(func, *args, **kwargs)
    # ATen's lerp: start + w * (end - start) for |w| < 0.5, else end - (end - start) * (1 - w)
    diffs = _run(aten._foreach_sub.List, ends, starts)
    if abs(weight) < 0.5:
        _run(aten._foreach_add_.List, starts, _run(aten._foreach_mul.Scalar, diffs,
                                                   float(weight)))
    else:
        out = _run(aten._foreach_sub.List, ends,
                   _run(aten._foreach_mul.Scalar, diffs, 1.0 - weight))
        _run(aten._foreach_copy_.default, starts, out)
    return None
