"""PyTorch's own OpInfo samples run on the tensord device and compared with CPU PyTorch.

Shared by the conformance suite (``test_opinfo.py``) and the coverage report
(``tools/op_coverage.py``). One OpInfo entry is checked on up to ``MAX_SAMPLES`` of its float32
sample inputs (drawn with a fixed seed, so every run sees the same values): the forward values
against PyTorch's on the CPU, and, for entries that support autograd, the gradients of every
input that requires one for a random cotangent. An op that leaves the daemon for the CPU fallback
(``tensord.torch.fallback_counts()``) counts as falling back, whatever its values.

Not checked yet: other dtypes, the non-contiguous sample variants, in-place and ``out=``
variants, random ops (their values follow tensord's generator, not PyTorch's: ``RANDOM``, and
samples whose reference draws from PyTorch's generator: ``NotComparable``). An entry whose
samples only fail with the device's refusal of their dtype (complex, int16) is
``dtype not on the device``, apart from wrong values.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Iterable, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

DEVICE = "tensord"
DTYPE = torch.float32
# Samples per entry: the first ones PyTorch generates (the suite must run in minutes on 2 cores).
MAX_SAMPLES = 6
# float32 tolerances: torch.testing's defaults (1.3e-6, 1e-5) widened 10x for sums, matmuls and
# transcendental functions evaluated in another order or by another libm.
RTOL, ATOL = 1e-4, 1e-5
# Entries whose values are random or uninitialised: only tensord's own tests can check them.
RANDOM = re.compile(r"(^|\.|_)(rand|randn|randint|normal|uniform|bernoulli|multinomial|dropout"
                    r"\w*|cauchy|exponential|geometric|log_normal|empty\w*|new_empty\w*"
                    r"|rrelu)($|\.|_)")

PASS, FAIL_FORWARD, FAIL_GRAD, FALLBACK, NO_SAMPLES, SKIPPED, CRASH, NO_DTYPE = (
    "passes", "fails forward", "fails grad", "falls back", "no float32 samples", "not compared",
    "kills the client", "dtype not on the device")
# The device's refusal of a dtype it has no tensors of (complex, int16: _transfer.native_dtype).
NO_DTYPE_ERROR = re.compile(r"^TypeError: the tensord device has no torch\.\w+ tensors")


class NotComparable(Exception):
    """A sample whose PyTorch reference cannot be compared: PyTorch raises on the CPU itself,
    or its value is drawn from PyTorch's generator (a ``dropout_p`` > 0, ``training=True``)."""


class _SeededOps(TorchDispatchMode):
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


def entry_name(op: Any) -> str:
    """``name`` or ``name.variant``: the key of an OpInfo entry in lists and reports."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def op_db() -> List[Any]:
    from torch.testing._internal.common_methods_invocations import op_db as db
    return list(db)


def SampleInput(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 (PyTorch's class)
    from torch.testing._internal.opinfo.core import SampleInput as cls
    return cls(*args, **kwargs)


@dataclasses.dataclass
class Result:
    name: str
    status: str
    samples: int = 0
    not_comparable: int = 0  # samples left out: NotComparable
    refused_dtype: int = 0  # samples the device refused for their dtype (NO_DTYPE_ERROR)
    forward_ok: int = 0
    grad_checked: int = 0
    grad_ok: int = 0
    fallbacks: Tuple[str, ...] = ()
    first_error: str = ""

    @property
    def forward_rate(self) -> float:
        return self.forward_ok / self.samples if self.samples else 0.0


def _to_device(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        t = x.detach().to(DEVICE)
        return t.requires_grad_(x.requires_grad) if x.requires_grad else t
    return x


def _tensors(out: Any) -> List[torch.Tensor]:
    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


def _close(got: Any, want: Any) -> None:
    g, w = _tensors(got), _tensors(want)
    if len(g) != len(w):
        raise AssertionError(f"{len(g)} tensor outputs, PyTorch has {len(w)}")
    for a, b in zip(g, w):
        torch.testing.assert_close(a.detach().cpu(), b.detach(), rtol=RTOL, atol=ATOL,
                                   equal_nan=True)
    if not w and got != want:  # a Python value (a size, a bool)
        raise AssertionError(f"{got!r} != {want!r}")


def _grads(op: Any, sample: Any, out: Any, inputs: List[torch.Tensor],
           cotangents: List[torch.Tensor]) -> Optional[Tuple[Any, ...]]:
    outs = _tensors(sample.output_process_fn_grad(out))
    pairs = [(o, c) for o, c in zip(outs, cotangents) if o.requires_grad and c is not None]
    if not pairs or not inputs:
        return None
    return torch.autograd.grad([o for o, _ in pairs], inputs, [c for _, c in pairs],
                               allow_unused=True)


def _differentiable_inputs(sample: Any) -> List[torch.Tensor]:
    flat = tree_flatten((sample.input, sample.args, sample.kwargs))[0]
    return [t for t in flat if isinstance(t, torch.Tensor) and t.requires_grad]


def check_sample(op: Any, sample: Any, grad: bool,
                 keep_cpu: Optional[List[bool]] = None) -> Tuple[bool, Optional[bool], str]:
    """(forward matches, gradients match or None when none is checked, the first error);
    raises NotComparable for a sample without a deterministic PyTorch reference."""
    mode = _SeededOps()
    try:
        with mode:
            want = op.op(sample.input, *sample.args, **sample.kwargs)
    except Exception as e:  # noqa: BLE001
        raise NotComparable(f"PyTorch raises on the CPU: {_short(e)}") from e
    if mode.seeded:
        raise NotComparable("its values come from PyTorch's random generator")
    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    cpu = keep_cpu if keep_cpu is not None and len(keep_cpu) == len(leaves) else ()
    d_input, d_args, d_kwargs = tree_unflatten(
        [x if i < len(cpu) and cpu[i] else _to_device(x) for i, x in enumerate(leaves)], spec)
    dev = SampleInput(d_input, args=d_args, kwargs=d_kwargs,
                      output_process_fn_grad=sample.output_process_fn_grad)
    got = op.op(dev.input, *dev.args, **dev.kwargs)
    try:
        _close(got, want)
    except Exception as e:  # noqa: BLE001 (any failure is this sample's verdict)
        return False, None, f"forward: {_short(e)}"
    if not grad:
        return True, None, ""
    gen = torch.Generator().manual_seed(1)
    cot = [torch.randn(t.shape, generator=gen, dtype=t.dtype) if t.is_floating_point() else None
           for t in _tensors(sample.output_process_fn_grad(want))]
    want_g = _grads(op, sample, want, _differentiable_inputs(sample), cot)
    if want_g is None:
        return True, None, ""
    try:
        got_g = _grads(op, dev, got, _differentiable_inputs(dev),
                       [None if c is None else c.to(DEVICE) for c in cot])
        if got_g is None:
            raise AssertionError("no output of the device's result requires grad")
        _close_grads(got_g, want_g)
    except Exception as e:  # noqa: BLE001
        try:  # Note [Float64 gradient reference]
            _close_grads(got_g, _grads_float64(op, sample, cot))
        except Exception:  # noqa: BLE001 (the float32 reference's verdict stands)
            return True, False, f"grad: {_short(e)}"
    return True, True, ""


def _close_grads(got_g: Any, want_g: Any) -> None:
    for a, b in zip(got_g, want_g):
        if (a is None) != (b is None):
            if b is not None and not b.any():  # PyTorch's explicit zero, tensord's none
                continue
            raise AssertionError("a gradient is missing on one side")
        if a is not None:
            torch.testing.assert_close(a.cpu(), b, rtol=RTOL, atol=ATOL, equal_nan=True)


# Note [Float64 gradient reference]: a float32 gradient that differs from CPU PyTorch's float32
# one is held to PyTorch's float64 gradient of the same sample (rounded to float32) before it
# counts as a mismatch, since some float32 references are mostly rounding noise:
# layer_norm over one element has exactly zero input and weight gradients, where PyTorch's
# float32 kernel returns ~1e-4 (x - mean is computed as x * rstd - mean * rstd, and the backward
# scales that by rstd^3 ~ 3e7 for eps = 1e-5). Values are still compared in float32 only.
def _grads_float64(op: Any, sample: Any, cot: List[Any]) -> Tuple[Any, ...]:
    def wide(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.dtype == DTYPE:
            return x.detach().double().requires_grad_(x.requires_grad)
        return x
    s64 = SampleInput(tree_map(wide, sample.input), args=tree_map(wide, sample.args),
                      kwargs=tree_map(wide, sample.kwargs),
                      output_process_fn_grad=sample.output_process_fn_grad)
    out = op.op(s64.input, *s64.args, **s64.kwargs)
    g = _grads(op, s64, out, _differentiable_inputs(s64),
               [None if c is None else c.double() for c in cot])
    if g is None:
        raise AssertionError("no float64 reference")
    return tuple(None if t is None else t.to(DTYPE) for t in g)


def _short(e: Exception) -> str:
    text = f"{type(e).__name__}: {e}".strip().splitlines()
    return " ".join(text[:3])[:240]


def samples(op: Any, max_samples: int = MAX_SAMPLES) -> List[Any]:
    torch.manual_seed(0)
    out = []
    for s in op.sample_inputs("cpu", DTYPE, requires_grad=op.supports_autograd):
        out.append(s)
        if len(out) >= max_samples:
            break
    return out


def cpu_placements(op: Any, n: int) -> List[Optional[List[bool]]]:
    """For each of the first ``n`` samples, which tensor leaves PyTorch's sample function puts
    on the CPU whatever the device (``tensor_split``'s index tensor, which PyTorch requires on
    the CPU): the leaves that stay on the CPU when the samples are made for the meta device.
    None where the meta samples cannot be made."""
    out: List[Optional[List[bool]]] = []
    try:
        for s in op.sample_inputs("meta", DTYPE, requires_grad=False):
            leaves = tree_flatten((s.input, s.args, s.kwargs))[0]
            out.append([isinstance(x, torch.Tensor) and x.device.type == "cpu" for x in leaves])
            if len(out) >= n:
                break
    except Exception:  # noqa: BLE001 (a sample function that needs real values)
        return [None] * n
    return out + [None] * (n - len(out))


def run_entry(op: Any, fallback_counts: Any, reset_fallback_counts: Any,
              max_samples: int = MAX_SAMPLES) -> Result:
    """Every capped sample of ``op`` on the device; the entry's status and rates."""
    name = entry_name(op)
    if RANDOM.search(op.name):
        return Result(name, SKIPPED)
    if DTYPE not in op.supported_dtypes("cpu"):
        return Result(name, NO_SAMPLES)
    try:
        cases = samples(op, max_samples)
    except Exception as e:  # noqa: BLE001 (PyTorch's generator needs something missing here)
        return Result(name, SKIPPED, first_error=f"samples: {_short(e)}")
    if not cases:
        return Result(name, NO_SAMPLES)
    r = Result(name, PASS)
    reset_fallback_counts()
    before = os.environ.get("TENSORD_TORCH_NO_FALLBACK")
    os.environ["TENSORD_TORCH_NO_FALLBACK"] = "1"  # a fallback raises at once (still counted)
    try:
        _run_cases(op, cases, r, cpu_placements(op, len(cases)))
    finally:
        if before is None:
            del os.environ["TENSORD_TORCH_NO_FALLBACK"]
        else:
            os.environ["TENSORD_TORCH_NO_FALLBACK"] = before
    r.fallbacks = tuple(sorted(fallback_counts()))
    if r.fallbacks:
        r.status = FALLBACK
    elif not r.samples:
        r.status = SKIPPED
    elif r.forward_ok < r.samples and r.forward_ok + r.refused_dtype == r.samples:
        r.status = NO_DTYPE
    elif r.forward_ok < r.samples and _cpu_compare_excluded(op):
        r.status = SKIPPED
        r.first_error = ("not compared: PyTorch's own device-vs-CPU test (test_compare_cpu) "
                         f"expects this entry to differ; here: {r.first_error}")
    elif r.forward_ok < r.samples:
        r.status = FAIL_FORWARD
    elif r.grad_ok < r.grad_checked:
        r.status = FAIL_GRAD
    return r


def _cpu_compare_excluded(op: Any) -> bool:
    """Whether PyTorch's OpInfo marks ``TestCommon.test_compare_cpu`` (an accelerator's result
    against the CPU's) as failing or skipped for every device: a difference PyTorch keeps on
    purpose (``native_batch_norm``'s eval-mode statistics: CUDA and the meta function return
    the running ones, the CPU empty tensors; pytorch/pytorch#85960)."""
    return any(getattr(d, "cls_name", None) == "TestCommon"
               and getattr(d, "test_name", None) == "test_compare_cpu"
               and getattr(d, "device_type", None) in (None, "cuda")
               and getattr(d, "dtypes", None) in (None, ) for d in op.decorators)


def _run_cases(op: Any, cases: List[Any], r: Result,
               placements: List[Optional[List[bool]]]) -> None:
    for s, keep_cpu in zip(cases, placements):
        try:
            fwd, grd, err = check_sample(op, s, op.supports_autograd, keep_cpu)
        except NotComparable as e:
            r.not_comparable += 1
            r.first_error = r.first_error or f"not compared: {e}"
            continue
        except Exception as e:  # noqa: BLE001 (PyTorch itself or the device raised)
            fwd, grd, err = False, None, _short(e)
        r.samples += 1
        r.forward_ok += fwd
        if grd is not None:
            r.grad_checked += 1
            r.grad_ok += grd
        r.refused_dtype += bool(NO_DTYPE_ERROR.match(err))
        if err and (not r.first_error or r.first_error.startswith("not compared")):
            r.first_error = err


def run_all(names: Optional[Iterable[str]] = None, max_samples: int = MAX_SAMPLES,
            progress: bool = False) -> List[Result]:
    import sys
    import tensord.torch as tdt
    wanted = set(names) if names is not None else None
    results = []
    for op in op_db():
        if wanted is not None and entry_name(op) not in wanted:
            continue
        if progress:
            print(entry_name(op), file=sys.stderr, flush=True)
        results.append(run_entry(op, tdt.fallback_counts, tdt.reset_fallback_counts,
                                 max_samples))
    return results
