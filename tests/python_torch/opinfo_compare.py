"""How one OpInfo sample's result on the tensord device is held to CPU PyTorch's.

Values compare with a tolerance per dtype (``TOLERANCES``; integer and bool results exactly, and
every result in PyTorch's dtype), gradients for a fixed random cotangent. A sample whose
reference cannot be trusted raises ``NotComparable``. Used by ``opinfo_harness.py``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

DEVICE = "tensord"
# (rtol, atol) per floating dtype: torch.testing's defaults (float32 1.3e-6/1e-5, float64
# 1e-7/1e-7, bfloat16 1.6e-2/1e-5) with rtol widened ~10x for sums, matmuls and transcendental
# functions evaluated in another order or by another libm; bfloat16 keeps PyTorch's rtol (two
# units in its last place) and gets an atol of 1e-3 for results that cancel to near zero, where
# a rounding of an input by one bfloat16 unit moves the result by far more than 1e-5. Any other
# dtype (int64, bool) compares exactly.
TOLERANCES: Dict[torch.dtype, Tuple[float, float]] = {
    torch.float32: (1e-4, 1e-5),
    torch.float64: (1e-6, 1e-7),
    torch.bfloat16: (1.6e-2, 1e-3),
}


def tolerance(dtype: torch.dtype) -> Tuple[float, float]:
    return TOLERANCES.get(dtype, (0.0, 0.0))


class NotComparable(Exception):
    """A sample whose PyTorch reference cannot be compared: PyTorch raises on the CPU itself,
    or its value is drawn from PyTorch's generator (a ``dropout_p`` > 0, ``training=True``)."""


class SeededOps(TorchDispatchMode):
    """Notes whether an op PyTorch tags ``nondeterministic_seeded`` (dropout's bernoulli,
    ``rand``) ran: such a reference depends on PyTorch's random stream, not the device's."""

    seeded = False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if torch.Tag.nondeterministic_seeded in func.tags and _draws(func, args, kwargs or {}):
            self.seeded = True
        return func(*args, **(kwargs or {}))


def _draws(func: Any, args: Any, kwargs: Any) -> bool:
    """Whether a seeded op really draws: not with a dropout probability of 0 or ``train=False``
    (SDPA's CPU kernels are tagged for their ``dropout_p``)."""
    for i, a in enumerate(func._schema.arguments):
        v = args[i] if i < len(args) else kwargs.get(a.name, a.default_value)
        if (a.name in ("dropout_p", "p") and v == 0) or (a.name == "train" and v is False):
            return False
    return True


def SampleInput(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 (PyTorch's class)
    from torch.testing._internal.opinfo.core import SampleInput as cls
    return cls(*args, **kwargs)


def tensors(out: Any) -> List[torch.Tensor]:
    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


# Note [Eigenvector signs]: an eigenvector is unique only up to its sign (torch.linalg.eigh's
# documentation: "different hardware and software may compute different eigenvectors"), and the
# sign LAPACK gives differs between implementations: PyTorch's CPU wheel runs MKL's syevd, the
# daemon OpenBLAS's (the same routine and UPLO; MKL's sytrd gives the same tridiagonal form, its
# steqr other column signs), so 2 of 5 columns of a 5x5 sample came out negated. PyTorch's own
# cross-device test (test_ops.py's test_compare_cpu) compares such results through the sample's
# output_process_fn_grad (abs of the eigenvectors); stricter, each column of the device's
# eigenvectors is flipped to the sign of PyTorch's before the comparison, so that it must still
# equal PyTorch's column up to one sign. Entry name -> the index of that output.
SIGN_FREE_COLUMNS: Dict[str, int] = {"linalg.eigh": 1}


def align_column_signs(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """``got`` (on the CPU) with each column's sign flipped to agree with ``want``'s: the sign of
    their dot product (a zero one keeps the column)."""
    g = got.detach().cpu()
    if g.shape != want.shape or g.dtype != want.dtype or g.is_complex():
        return g
    dot = (g * want.detach()).sum(-2, keepdim=True)
    return g * torch.where(dot < 0, -1, 1).to(g.dtype)


def close(got: Any, want: Any, sign_free: Optional[int] = None) -> None:
    """Every tensor of ``got`` equals PyTorch's ``want`` in dtype, shape and value (output
    ``sign_free``'s columns up to their signs: Note [Eigenvector signs])."""
    g, w = tensors(got), tensors(want)
    if len(g) != len(w):
        raise AssertionError(f"{len(g)} tensor outputs, PyTorch has {len(w)}")
    if sign_free is not None and sign_free < len(g):
        g[sign_free] = align_column_signs(g[sign_free], w[sign_free])
    for a, b in zip(g, w):
        rtol, atol = tolerance(b.dtype)
        torch.testing.assert_close(a.detach().cpu(), b.detach(), rtol=rtol, atol=atol,
                                   equal_nan=True)
    if not w and got != want:  # a Python value (a size, a bool)
        raise AssertionError(f"{got!r} != {want!r}")


def grads(sample: Any, out: Any, inputs: List[torch.Tensor],
          cotangents: List[Optional[torch.Tensor]]) -> Optional[Tuple[Any, ...]]:
    outs = tensors(sample.output_process_fn_grad(out))
    pairs = [(o, c) for o, c in zip(outs, cotangents) if o.requires_grad and c is not None]
    if not pairs or not inputs:
        return None
    # each cotangent on its output's device: an output left on the CPU (to("cpu")) has a CPU
    # one, a device output a device one (PyTorch's engine asserts on a mismatch)
    return torch.autograd.grad([o for o, _ in pairs], inputs, [c.to(o.device) for o, c in pairs],
                               allow_unused=True)


def cotangents(sample: Any, want: Any) -> List[Optional[torch.Tensor]]:
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(t.shape, generator=gen, dtype=t.dtype) if t.is_floating_point()
            else None for t in tensors(sample.output_process_fn_grad(want))]


def differentiable_inputs(sample: Any) -> List[torch.Tensor]:
    flat = tree_flatten((sample.input, sample.args, sample.kwargs))[0]
    return [t for t in flat if isinstance(t, torch.Tensor) and t.requires_grad]


def close_grads(got_g: Any, want_g: Any) -> None:
    for a, b in zip(got_g, want_g):
        if (a is None) != (b is None):
            if b is not None and not b.any():  # PyTorch's explicit zero, tensord's none
                continue
            raise AssertionError("a gradient is missing on one side")
        if a is not None:
            rtol, atol = tolerance(b.dtype)
            torch.testing.assert_close(a.cpu(), b, rtol=rtol, atol=atol, equal_nan=True)


# Note [Float64 gradient reference]: a float32 (or bfloat16) gradient that differs from CPU
# PyTorch's one in the same dtype is held to PyTorch's float64 gradient of the same sample
# (rounded to that dtype) before it counts as a mismatch, since some references are mostly
# rounding noise: layer_norm over one element has exactly zero input and weight gradients, where
# PyTorch's float32 kernel returns ~1e-4 (x - mean is computed as x * rstd - mean * rstd, and the
# backward scales that by rstd^3 ~ 3e7 for eps = 1e-5). Values are compared in the dtype only.
def grads_float64(fn: Any, sample: Any, cot: List[Any], dtype: torch.dtype) -> Tuple[Any, ...]:
    if dtype == torch.float64:
        raise AssertionError("the reference is float64 already")

    def wide(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.dtype == dtype:
            return x.detach().double().requires_grad_(x.requires_grad)
        return x
    s64 = SampleInput(tree_map(wide, sample.input), args=tree_map(wide, sample.args),
                      kwargs=tree_map(wide, sample.kwargs),
                      output_process_fn_grad=sample.output_process_fn_grad)
    out = fn(s64.input, *s64.args, **s64.kwargs)
    g = grads(s64, out, differentiable_inputs(s64),
              [None if c is None else c.double() for c in cot])
    if g is None:
        raise AssertionError("no float64 reference")
    return tuple(None if t is None else t.to(dtype) for t in g)


def short(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip().splitlines()
    return " ".join(text[:3])[:240]
