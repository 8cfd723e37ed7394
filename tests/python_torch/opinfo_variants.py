"""The forms in which an OpInfo sample runs: as PyTorch generates it, on non-contiguous inputs,
through the in-place variant, and with ``out=``.

Each variant is a callable run the same way on the CPU (PyTorch's reference) and on the device,
so the comparison of ``opinfo_compare.py`` applies to all of them unchanged:

- ``noncontig``: every tensor input made non-contiguous *on the device* (PyTorch's
  ``SampleInput.noncontiguous``: each value every other element of a buffer twice its size),
  since a non-contiguous CPU tensor arrives on the device as a contiguous copy;
- ``inplace``: ``op.inplace_variant`` on a clone of the input (so the input's gradient flows
  through the clone); it must return that clone, whose value is compared;
- ``out``: ``op.op(..., out=)`` into fresh tensors of the reference's dtypes and shapes; it must
  return them, and their values are compared. No gradients (PyTorch refuses ``out=`` under
  autograd).

A form PyTorch itself refuses on the CPU for a sample (an in-place op whose result dtype the
input cannot hold, an input the result broadcasts over) is not compared for that sample.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from opinfo_compare import DEVICE, SampleInput

PLAIN, NONCONTIG, INPLACE, OUT = "plain", "noncontig", "inplace", "out"
VARIANTS = (PLAIN, NONCONTIG, INPLACE, OUT)


def has_variant(op: Any, variant: str) -> bool:
    if variant == INPLACE:
        return op.inplace_variant is not None
    if variant == OUT:
        return bool(op.supports_out)
    return variant in VARIANTS


def takes_grad(variant: str) -> bool:
    return variant != OUT


def runner(op: Any, variant: str, template: Any = None,
           device: str = "cpu") -> Callable[..., Any]:
    """The callable that runs a sample's ``(input, *args, **kwargs)`` in ``variant`` on
    ``device``; ``out`` needs PyTorch's plain result (``template``) to size its outputs."""
    if variant == INPLACE:
        return lambda x, *a, **k: _inplace(op, x, *a, **k)
    if variant == OUT:
        return lambda *a, **k: _out(op, template, device, *a, **k)
    return op.op


def _inplace(op: Any, x: Any, *args: Any, **kwargs: Any) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"the input is a {type(x).__name__}, not a tensor")
    y = x.clone()
    res = op.inplace_variant(y, *args, **kwargs)
    if res is not y:
        raise AssertionError("the in-place variant returned a new tensor, not its input")
    return y


def _out(op: Any, template: Any, device: str, *args: Any, **kwargs: Any) -> Any:
    if isinstance(template, torch.Tensor):
        out: Any = _empty_like(template, device)
        leaves = [out]
    elif isinstance(template, (tuple, list)) and template and all(
            isinstance(t, torch.Tensor) for t in template):
        leaves = [_empty_like(t, device) for t in template]
        out = tuple(leaves)
    else:
        raise TypeError(f"out= for a result of type {type(template).__name__}")
    res = op.op(*args, **kwargs, out=out)
    got = [res] if isinstance(res, torch.Tensor) else list(res)
    if len(got) != len(leaves) or any(a is not b for a, b in zip(got, leaves)):
        raise AssertionError("the out= form returned other tensors than its out= arguments")
    return out


def _empty_like(t: torch.Tensor, device: str) -> torch.Tensor:
    return torch.empty(t.shape, dtype=t.dtype, device=device)


def device_sample(sample: Any, variant: str, keep_cpu: Optional[List[bool]]) -> Any:
    """The sample's tensors moved to the device (but for the ones ``keep_cpu`` marks: see
    ``opinfo_harness.cpu_placements``), made non-contiguous there for ``noncontig``."""
    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    cpu = keep_cpu if keep_cpu is not None and len(keep_cpu) == len(leaves) else ()
    moved = [x if i < len(cpu) and cpu[i] else _to_device(x) for i, x in enumerate(leaves)]
    if variant == NONCONTIG:
        moved = [_noncontiguous(x) for x in moved]
    d_input, d_args, d_kwargs = tree_unflatten(moved, spec)
    return SampleInput(d_input, args=d_args, kwargs=d_kwargs,
                       output_process_fn_grad=sample.output_process_fn_grad)


def noncontiguous_leaves(sample: Any) -> Tuple[int, int]:
    """(device tensors, the non-contiguous ones among those with more than one element)."""
    ts = [t for t in tree_flatten((sample.input, sample.args, sample.kwargs))[0]
          if isinstance(t, torch.Tensor) and t.device.type != "cpu" and t.numel() > 1]
    return len(ts), sum(not t.is_contiguous() for t in ts)


def _to_device(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        t = x.detach().to(DEVICE)
        return t.requires_grad_(x.requires_grad) if x.requires_grad else t
    return x


def cpu_noncontiguous(sample: Any) -> Any:
    """The CPU reference of a ``noncontig`` sample: its tensors laid out as on the device."""
    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    d_input, d_args, d_kwargs = tree_unflatten([_noncontiguous(x, True) for x in leaves], spec)
    return SampleInput(d_input, args=d_args, kwargs=d_kwargs,
                       output_process_fn_grad=sample.output_process_fn_grad)


def _noncontiguous(x: Any, on_cpu: bool = False) -> Any:
    if not isinstance(x, torch.Tensor) or (x.device.type == "cpu") != on_cpu:
        return x
    from torch.testing._internal.common_utils import noncontiguous_like
    with torch.no_grad():
        return noncontiguous_like(x).requires_grad_(x.requires_grad)
