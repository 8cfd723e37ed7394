"""PyTorch's own OpInfo samples run on the tensord device and compared with CPU PyTorch.

Shared by the conformance suite (``test_opinfo.py``) and the coverage report
(``tools/op_coverage.py``). One *case* is an OpInfo entry, a dtype and a variant
(``opinfo_variants.py``: ``plain``, ``noncontig``, ``inplace``, ``out``): its sample inputs of
that dtype (drawn with a fixed seed, so every run sees the same values; up to ``max_samples``)
run in that form, the forward values held to PyTorch's on the CPU (``opinfo_compare.py``:
tolerances per dtype, integers exactly, eigenvectors up to their signs), and, for floating
dtypes of entries that support autograd, the gradients of every input that requires one for a
random cotangent. An op that leaves the daemon for the CPU fallback
(``tensord.torch.fallback_counts()``) counts as falling back, whatever its values.

Not checked: random ops (their values follow tensord's generator, not PyTorch's: ``RANDOM``,
and samples whose reference draws from PyTorch's generator: ``NotComparable``). A case whose
samples only fail with the device's refusal of their dtype (complex, int16) is
``dtype not on the device``, apart from wrong values.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Iterable, List, Optional, Tuple

import torch
from torch.utils._pytree import tree_flatten

import opinfo_variants as V
from opinfo_compare import (DEVICE, SIGN_FREE_COLUMNS, NotComparable, SeededOps, close,
                            close_grads, cotangents, differentiable_inputs, grads,
                            grads_float64, short, tolerance)

DTYPE = torch.float32  # the dtype of the base case (every listed entry is held to it)
# The dtypes a case may have: those the device holds and PyTorch's OpInfos generate.
DTYPES = (torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16)
# Samples per entry in the base case: the first ones PyTorch generates (the suite must run in
# minutes on 2 cores); the other cases of the suite take fewer (test_opinfo.EXTRA_SAMPLES).
MAX_SAMPLES = 6
RTOL, ATOL = tolerance(DTYPE)
# Entries whose values are random or uninitialised: only tensord's own tests can check them.
RANDOM = re.compile(r"(^|\.|_)(rand|randn|randint|normal|uniform|bernoulli|multinomial|dropout"
                    r"\w*|cauchy|exponential|geometric|log_normal|empty\w*|new_empty\w*"
                    r"|rrelu)($|\.|_)")

PASS, FAIL_FORWARD, FAIL_GRAD, FALLBACK, NO_SAMPLES, SKIPPED, CRASH, NO_DTYPE = (
    "passes", "fails forward", "fails grad", "falls back", "no samples", "not compared",
    "kills the client", "dtype not on the device")
NOT_IN_OPINFO, NO_VARIANT = "dtype not in the OpInfo", "no such variant"
# The device's refusal of a dtype it has no tensors of (complex, int16: _transfer.native_dtype).
NO_DTYPE_ERROR = re.compile(r"^TypeError: the tensord device has no torch\.\w+ tensors")


def entry_name(op: Any) -> str:
    """``name`` or ``name.variant``: the key of an OpInfo entry in lists and reports."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def dtype_of(name: str) -> torch.dtype:
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"{name!r} is not a torch dtype")
    return dt


def op_db() -> List[Any]:
    from torch.testing._internal.common_methods_invocations import op_db as db
    return list(db)


@dataclasses.dataclass
class Result:
    name: str
    status: str
    dtype: str = "float32"
    variant: str = V.PLAIN
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


def check_sample(op: Any, sample: Any, grad: bool, keep_cpu: Optional[List[bool]] = None,
                 variant: str = V.PLAIN) -> Tuple[bool, Optional[bool], str]:
    """(forward matches, gradients match or None when none is checked, the first error);
    raises NotComparable for a sample without a deterministic PyTorch reference."""
    if variant == V.INPLACE and sample.broadcasts_input:
        raise NotComparable("the in-place variant cannot broadcast its input")
    if variant == V.NONCONTIG:  # the same layout on the CPU (as_strided reads the storage)
        sample = V.cpu_noncontiguous(sample)
    mode = SeededOps()
    try:
        with mode:
            template = op.op(sample.input, *sample.args, **sample.kwargs) \
                if variant == V.OUT else None
            ref = V.runner(op, variant, template, "cpu")
            if variant != V.OUT:
                want = ref(sample.input, *sample.args, **sample.kwargs)
        if variant == V.OUT and not mode.seeded:
            # Outside the mode: under any dispatch mode some out= composites assign their
            # result to the C++ reference instead of writing out= (Note [Rebound out=] of
            # tensord/torch/_out_rebinding.py), which left the CPU's reference uninitialised.
            want = ref(sample.input, *sample.args, **sample.kwargs)
    except Exception as e:  # noqa: BLE001
        raise NotComparable(f"PyTorch raises on the CPU: {short(e)}") from e
    if mode.seeded:
        raise NotComparable("its values come from PyTorch's random generator")
    dev = V.device_sample(sample, variant, keep_cpu)
    if variant == V.NONCONTIG:
        n, nc = V.noncontiguous_leaves(dev)
        if nc < n:
            raise AssertionError(f"only {nc} of {n} device inputs are non-contiguous")
    fn = V.runner(op, variant, template, DEVICE)
    got = fn(dev.input, *dev.args, **dev.kwargs)
    try:
        close(got, want, SIGN_FREE_COLUMNS.get(entry_name(op)))
    except Exception as e:  # noqa: BLE001 (any failure is this sample's verdict)
        return False, None, f"forward: {short(e)}"
    if not grad:
        return True, None, ""
    cot = cotangents(sample, want)
    try:
        want_g = grads(sample, want, differentiable_inputs(sample), cot)
    except Exception:  # noqa: BLE001 (PyTorch has no gradient of this form: none to check)
        want_g = None
    if want_g is None:
        return True, None, ""
    got_g = None
    try:
        got_g = grads(dev, got, differentiable_inputs(dev),
                      [None if c is None else c.to(DEVICE) for c in cot])
        if got_g is None:
            raise AssertionError("no output of the device's result requires grad")
        close_grads(got_g, want_g)
    except Exception as e:  # noqa: BLE001
        try:  # Note [Float64 gradient reference] (opinfo_compare.py)
            close_grads(got_g, grads_float64(ref, sample, cot, want_g_dtype(want_g)))
        except Exception:  # noqa: BLE001 (the reference's verdict stands)
            return True, False, f"grad: {short(e)}"
    return True, True, ""


def want_g_dtype(want_g: Any) -> torch.dtype:
    return next((t.dtype for t in want_g if t is not None), DTYPE)


def takes_grad(op: Any, dtype: torch.dtype, variant: str) -> bool:
    return (op.supports_autograd and dtype.is_floating_point and V.takes_grad(variant)
            and dtype in op.supported_backward_dtypes("cpu"))


def sample_inputs(op: Any, device: str, dtype: torch.dtype, requires_grad: bool) -> Any:
    """``op.sample_inputs`` as PyTorch's own tests iterate it outside a unittest (the RNG
    seeded with ``SEED`` before each sample), without its ``TrackedInputIter``: that walks the
    interpreter's stack (``inspect.stack``) twice per call, 3/4 of a case's time under pytest."""
    from torch.testing._internal.common_utils import SEED
    it = iter(op.sample_inputs_func(op, device, dtype, requires_grad))
    while True:
        _seed_cpu(SEED)
        try:
            yield next(it)
        except StopIteration:
            return


def _seed_cpu(seed: int) -> None:
    """``set_rng_seed`` of PyTorch's tests but for the CPU generator only: ``torch.manual_seed``
    seeds the tensord device too (a daemon command), which no sample's values depend on."""
    import random

    import numpy as np
    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def samples(op: Any, dtype: torch.dtype = DTYPE, max_samples: Optional[int] = MAX_SAMPLES,
            requires_grad: Optional[bool] = None) -> List[Any]:
    """The first ``max_samples`` (all for None) of ``op``'s samples of ``dtype``."""
    if requires_grad is None:
        requires_grad = takes_grad(op, dtype, V.PLAIN)
    out = []
    for s in sample_inputs(op, "cpu", dtype, requires_grad):
        out.append(s)
        if max_samples is not None and len(out) >= max_samples:
            break
    return out


def cpu_placements(op: Any, n: int, dtype: torch.dtype = DTYPE) -> List[Optional[List[bool]]]:
    """For each of the first ``n`` samples, which tensor leaves PyTorch's sample function puts
    on the CPU whatever the device (``tensor_split``'s index tensor, which PyTorch requires on
    the CPU): the leaves that stay on the CPU when the samples are made for the meta device.
    None where the meta samples cannot be made."""
    out: List[Optional[List[bool]]] = []
    try:
        for s in sample_inputs(op, "meta", dtype, False):
            leaves = tree_flatten((s.input, s.args, s.kwargs))[0]
            out.append([isinstance(x, torch.Tensor) and x.device.type == "cpu" for x in leaves])
            if len(out) >= n:
                break
    except Exception:  # noqa: BLE001 (a sample function that needs real values)
        return [None] * n
    return out + [None] * (n - len(out))


def run_entry(op: Any, fallback_counts: Any, reset_fallback_counts: Any,
              max_samples: Optional[int] = MAX_SAMPLES, dtype: torch.dtype = DTYPE,
              variant: str = V.PLAIN) -> Result:
    """Every (capped) sample of ``op`` of ``dtype`` on the device, in ``variant``: the case's
    status and rates."""
    r = Result(entry_name(op), PASS, dtype_name(dtype), variant)
    if RANDOM.search(op.name):
        r.status = SKIPPED
        return r
    if dtype not in op.supported_dtypes("cpu"):
        r.status = NOT_IN_OPINFO
        return r
    if not V.has_variant(op, variant):
        r.status = NO_VARIANT
        return r
    grad = takes_grad(op, dtype, variant)
    try:
        cases = samples(op, dtype, max_samples, grad)
    except Exception as e:  # noqa: BLE001 (PyTorch's generator needs something missing here)
        r.status, r.first_error = SKIPPED, f"samples: {short(e)}"
        return r
    if not cases:
        r.status = NO_SAMPLES
        return r
    reset_fallback_counts()
    before = os.environ.get("TENSORD_TORCH_NO_FALLBACK")
    os.environ["TENSORD_TORCH_NO_FALLBACK"] = "1"  # a fallback raises at once (still counted)
    try:
        _run_cases(op, cases, r, cpu_placements(op, len(cases), dtype), grad)
    finally:
        if before is None:
            del os.environ["TENSORD_TORCH_NO_FALLBACK"]
        else:
            os.environ["TENSORD_TORCH_NO_FALLBACK"] = before
    r.fallbacks = tuple(sorted(fallback_counts()))
    r.status = _status(op, r)
    return r


def _status(op: Any, r: Result) -> str:
    if r.fallbacks:
        return FALLBACK
    if not r.samples:
        return SKIPPED
    if r.forward_ok < r.samples and r.forward_ok + r.refused_dtype == r.samples:
        return NO_DTYPE
    if r.forward_ok < r.samples and _cpu_compare_excluded(op):
        r.first_error = ("not compared: PyTorch's own device-vs-CPU test (test_compare_cpu) "
                         f"expects this entry to differ; here: {r.first_error}")
        return SKIPPED
    if r.forward_ok < r.samples:
        return FAIL_FORWARD
    if r.grad_ok < r.grad_checked:
        return FAIL_GRAD
    return PASS


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
               placements: List[Optional[List[bool]]], grad: bool) -> None:
    for s, keep_cpu in zip(cases, placements):
        try:
            fwd, grd, err = check_sample(op, s, grad, keep_cpu, r.variant)
        except NotComparable as e:
            r.not_comparable += 1
            r.first_error = r.first_error or f"not compared: {e}"
            continue
        except Exception as e:  # noqa: BLE001 (PyTorch itself or the device raised)
            fwd, grd, err = False, None, short(e)
        r.samples += 1
        r.forward_ok += fwd
        if grd is not None:
            r.grad_checked += 1
            r.grad_ok += grd
        r.refused_dtype += bool(NO_DTYPE_ERROR.match(err))
        if err and (not r.first_error or r.first_error.startswith("not compared")):
            r.first_error = err


def run_all(names: Optional[Iterable[str]] = None, max_samples: Optional[int] = MAX_SAMPLES,
            progress: bool = False) -> List[Result]:
    """The base case (float32, plain) of every entry (or those named)."""
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
