"""Gradients of every differentiable catalog op, against PyTorch and against finite differences.

Table-driven from op_cases.py (the forward reference cases): every case with floating inputs
runs with those inputs requiring grad; a fixed random weighting of its floating outputs is summed
into a scalar loss and ``backward()`` runs in the daemon. The gradients must match
``torch.autograd.grad`` on the same computation (float32/float64 cases), and, in float64, central
finite differences of the daemon's own forward (``test_grad_matches_finite_differences``).
``test_every_differentiable_op_has_a_gradient_case`` fails when a differentiable op of the catalog
has no such case. The fused optimizer ops are checked against ``torch.optim`` step by step.
``test_grad_matches_torch`` runs on every device of the daemon (the ``device`` fixture,
conftest.py: cuda:0 skips without a GPU); finite differences run on the CPU.
"""

from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np
import pytest
import torch

import tensord as td
from helpers import TD
from op_cases import NC, Case, cases
from op_cases_linalg import CPU_ONLY

pytestmark = pytest.mark.usefixtures("session")

F = td.CatalogFunction
HALF = (torch.float16, torch.bfloat16)
RANDOM = {"rand_like", "randn_like", "empty_like", "empty", "randint"}
# Inputs that carry no gradient in PyTorch (running statistics, class weights).
NO_GRAD_ARGS = {"batch_norm": {1, 2}, "nll_loss": {2}, "cross_entropy": {2},
                "fused_cross_entropy": {2}, "binary_cross_entropy": {2},
                "binary_cross_entropy_with_logits": {2, 3},
                "multi_margin_loss": {2},  # its class weights: no derivative in ATen either
                "zeta": {0},  # zeta's derivative in x: not implemented (PyTorch's neither)
                "igamma": {0}, "igammac": {0}}  # neither is differentiable in a (as PyTorch)

# Ops whose gradient (ATen's, and so the daemon's) is not the derivative of their value:
# _ctc_loss's is that of the loss composed with log_softmax (exp(log_probs) less the
# posteriors; torch.autograd.gradcheck fails on it too). Checked against PyTorch only.
NOT_THE_DERIVATIVE = {"_ctc_loss"}


def _tensors(v: Any) -> List[torch.Tensor]:
    if isinstance(v, NC):
        return [v.t]
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, list):
        return [t for x in v for t in _tensors(x)]
    return []


def _grad_case(c: Case) -> bool:
    ts = [t for a in c.args for t in _tensors(a)]
    if c.op in RANDOM or c.check is not None or any(t.dtype in HALF for t in ts):
        return False
    if any(isinstance(v, torch.dtype) and v in HALF for v in c.kwargs.values()):
        return False
    return any(t.dtype.is_floating_point and t.numel() > 0 for t in ts)


CASES = [c for c in cases() if _grad_case(c)]


def _id(c: Case) -> str:
    def d(v: Any) -> str:
        if isinstance(v, NC):
            return "nc" + d(v.t)
        if isinstance(v, torch.Tensor):
            return f"{str(v.dtype)[6:]}{list(v.shape)}"
        if isinstance(v, list):
            return "[" + ",".join(d(x) for x in v) + "]"
        return repr(v)
    kw = ",".join(f"{k}={v}" for k, v in c.kwargs.items())
    return f"{c.op}({','.join(d(a) for a in c.args)}{';' + kw if kw else ''})"


class Leaves:
    """The differentiable inputs of one case, on both sides."""

    def __init__(self) -> None:
        self.items: List[Tuple[td.Tensor, torch.Tensor, bool]] = []  # (daemon leaf, torch, nc)

    def build(self, v: Any, f64: bool, grad: bool) -> Tuple[Any, Any]:
        """(daemon argument, torch argument) for one case argument."""
        if isinstance(v, list):
            pairs = [self.build(x, f64, grad) for x in v]
            return [p[0] for p in pairs], [p[1] for p in pairs]
        nc = isinstance(v, NC)
        t = v.t if nc else v
        if not isinstance(t, torch.Tensor):
            return v, v
        floating = t.dtype.is_floating_point
        if floating and f64:
            t = t.double()
        base = t.transpose(0, -1).contiguous() if nc else t
        req = grad and floating
        leaf = td.tensor(base.numpy(), dtype=TD[base.dtype], requires_grad=req)
        arg = F("transpose")(leaf, dim0=0, dim1=-1) if nc else leaf
        tt = t.detach().clone().requires_grad_(req)
        if req:
            self.items.append((leaf, tt, nc))
        return arg, tt


def _outputs(v: Any) -> List[Any]:
    if isinstance(v, (tuple, list)):
        return list(v)
    return [v]


def _run(c: Case, f64: bool, seed: int = 0):
    """Builds the case; returns (leaves, daemon loss, torch loss, torch loss function)."""
    leaves = Leaves()
    dargs, targs = [], []
    skip = NO_GRAD_ARGS.get(c.op, set())
    for i, a in enumerate(c.args):
        d, t = leaves.build(a, f64, i not in skip)
        dargs.append(d)
        targs.append(t)
    if c.op.endswith("_"):  # in place on a non-leaf, as the torch reference does
        dargs[0] = F("clone")(dargs[0])
    kwargs = {k: (TD[v] if isinstance(v, torch.dtype) else v) for k, v in c.kwargs.items()}
    if c.nout is not None:
        kwargs["_num_outputs"] = c.nout
    got = _outputs(F(c.op)(*dargs, **kwargs))
    ref = c.ref or getattr(torch, c.op, None) or getattr(torch.nn.functional, c.op)
    try:
        want = ref(*targs, **c.kwargs)
    except TypeError:
        want = ref(*[torch.tensor(a) if isinstance(a, (int, float)) else a for a in targs],
                   **c.kwargs)
    if isinstance(want, tuple) and hasattr(want, "values") and c.nout == 2:
        want = (want.values, want.indices)
    want = _outputs(want)
    g = torch.Generator().manual_seed(seed)
    dloss, tloss, weights = None, None, []
    for o, w in zip(got, want):
        if not (isinstance(w, torch.Tensor) and w.requires_grad):
            continue
        wt = torch.randn(w.shape, generator=g, dtype=torch.float64).to(w.dtype)
        weights.append(wt)
        term = F("sum")(F("mul")(o, td.tensor(wt.numpy())))
        dloss = term if dloss is None else F("add")(dloss, term)
        tt = (w * wt).sum()
        tloss = tt if tloss is None else tloss + tt
    return leaves, dloss, tloss


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_grad_matches_torch(case: Case, device: str) -> None:
    if device != "cpu" and case.op in CPU_ONLY:
        pytest.skip(f"{case.op} has no CUDA kernel (KnownCpuOnly)")
    info = td.default_session().catalog.get(case.op)
    if info is None or not info.differentiable:
        pytest.skip(f"{case.op} is not differentiable")
    leaves, dloss, tloss = _run(case, f64=False)
    if dloss is None:
        pytest.skip("no floating output requires grad")
    dloss.backward()
    tgrads = torch.autograd.grad(tloss, [t for _, t, _ in leaves.items], allow_unused=True)
    for (leaf, t, nc), want in zip(leaves.items, tgrads):
        got = leaf.grad
        if want is None:
            continue
        assert got is not None, f"no gradient for an input of {case.op}"
        assert str(got.device) == device, f"the gradient is on {got.device}, not {device}"
        g = got.numpy()
        if nc:
            g = np.swapaxes(g, 0, -1)
        if device == "cpu":
            tol = (1e-9, 1e-9) if t.dtype == torch.float64 else (2e-4, 2e-5)
        else:  # other summation orders (atomic adds, cuBLAS/cuDNN tilings) than the CPU's
            tol = (1e-8, 1e-9) if t.dtype == torch.float64 else (1e-3, 1e-4)
        np.testing.assert_allclose(g, want.numpy(), rtol=tol[0], atol=tol[1])


# The cases whose gradient is the derivative of their value (not NOT_THE_DERIVATIVE's, nor rows
# scaled by their frequency, nor embedding's padding_idx row, which is read but gets no
# gradient): the finite-difference suite's.
FD_CASES = [c for c in CASES
            if c.op not in NOT_THE_DERIVATIVE and not c.kwargs.get("scale_grad_by_freq")
            and not (c.op == "embedding" and c.kwargs.get("padding_idx", -1) >= 0)]


@pytest.mark.parametrize("case", FD_CASES, ids=[_id(c) for c in FD_CASES])
def test_grad_matches_finite_differences(case: Case) -> None:
    info = td.default_session().catalog.get(case.op)
    if info is None or not info.differentiable:
        pytest.skip(f"{case.op} is not differentiable")
    leaves, dloss, _ = _run(case, f64=True)
    if dloss is None:
        pytest.skip("no floating output requires grad")
    dloss.backward()
    analytic = [leaf.grad for leaf, _, _ in leaves.items]
    eps, limit = 1e-6, 12  # central differences on the first `limit` elements of each input
    for k, (leaf, t, nc) in enumerate(leaves.items):
        base = t.detach().numpy().copy()
        flat = base.reshape(-1)
        n = min(flat.size, limit)
        if n == 0:
            continue
        losses = []
        with td.no_grad():
            for i in range(n):
                for sign in (1, -1):
                    flat[i] += sign * eps
                    losses.append(_loss_at(case, k, torch.from_numpy(base.copy())))
                    flat[i] -= sign * eps
            values = F("stack")(losses).numpy()
        fd = (values[0::2] - values[1::2]) / (2 * eps)
        got = np.zeros(flat.size) if analytic[k] is None else analytic[k].numpy()
        if nc and analytic[k] is not None:
            got = np.swapaxes(got, 0, -1)
        np.testing.assert_allclose(np.asarray(got).reshape(-1)[:n], fd, rtol=1e-4, atol=1e-6,
                                   err_msg=f"input {k} of {case.op}")


def _loss_at(case: Case, k: int, value: torch.Tensor) -> td.Tensor:
    """The case's float64 loss (same weights) with differentiable input k set to `value`."""
    count = [0]

    def swap(v: Any) -> Any:
        if isinstance(v, list):
            return [swap(x) for x in v]
        t = v.t if isinstance(v, NC) else v
        if isinstance(t, torch.Tensor) and t.dtype.is_floating_point:
            idx = count[0]
            count[0] += 1
            if idx == k:
                return NC(value) if isinstance(v, NC) else value
        return v

    skip = NO_GRAD_ARGS.get(case.op, set())
    args = []
    for i, a in enumerate(case.args):
        args.append(a if i in skip else swap(a))
    _, dloss, _ = _run(case._replace(args=args), f64=True)
    return dloss


def test_every_differentiable_op_has_a_gradient_case() -> None:
    catalog = td.default_session().catalog
    diff = {name for name, op in catalog.items() if op.differentiable}
    missing = sorted(diff - {c.op for c in CASES})
    assert not missing, f"differentiable ops without a gradient case in op_cases.py: {missing}"


def test_dropout_gradient_is_its_mask() -> None:
    x = td.tensor(np.ones((50, 40), np.float32), requires_grad=True)
    y = F("dropout")(x, p=0.3)
    F("sum")(y).backward()
    kept = y.numpy() != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.7, rtol=1e-6)


# ------------------------------------------------------------------------------- optimizers
def _optim_run(make_torch, td_step, steps: int = 5, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    shapes = [(3, 4), (4,), ()]
    params = [torch.randn(s, generator=g) for s in shapes]
    grads = [[torch.randn(s, generator=g) for s in shapes] for _ in range(steps)]
    tp = [p.clone().requires_grad_(True) for p in params]
    opt = make_torch(tp)
    dp = [td.tensor(p.numpy()) for p in params]
    state = [[td.tensor(np.zeros(p.shape, np.float32)) for p in params] for _ in range(2)]
    for k in range(steps):
        for p, gr in zip(tp, grads[k]):
            p.grad = gr.clone()
        opt.step()
        td_step(dp, [td.tensor(gr.numpy()) for gr in grads[k]], state, k + 1)
        for a, b in zip(dp, tp):
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"step {k + 1}")


@pytest.mark.parametrize("kw", [dict(lr=0.1), dict(lr=0.1, momentum=0.9),
                                dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
                                dict(lr=0.1, momentum=0.5, dampening=0.3, weight_decay=0.1),
                                dict(lr=0.1, momentum=0.9, maximize=True)])
def test_sgd_step_matches_torch(kw: dict) -> None:
    def step(params, grads, state, k):
        bufs = state[0] if kw.get("momentum", 0) else []
        for p, gr in zip(params, grads):
            p.grad = gr  # the op reads .grad (Note [Optimizer steps read .grad])
        F("sgd_step")(*params, *bufs, n=len(params), first_step=k == 1,
                      **{a: float(v) if not isinstance(v, bool) else v for a, v in kw.items()})
    _optim_run(lambda p: torch.optim.SGD(p, **kw), step)


@pytest.mark.parametrize("adamw", [False, True])
@pytest.mark.parametrize("kw", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1, eps=1e-6),
                                dict(lr=0.02, betas=(0.8, 0.9), maximize=True)])
def test_adam_step_matches_torch(kw: dict, adamw: bool) -> None:
    counts = []  # Note [Adam step counts]: CPU scalars the op counts

    def step(params, grads, state, k):
        b1, b2 = kw.get("betas", (0.9, 0.999))
        for p, gr in zip(params, grads):
            p.grad = gr
        if not counts:
            counts.extend(td.zeros((), device="cpu") for _ in params)
        F("adam_step")(*params, *state[0], *state[1], *counts, n=len(params),
                       lr=kw["lr"], beta1=b1, beta2=b2, eps=kw.get("eps", 1e-8),
                       weight_decay=kw.get("weight_decay", 0.01 if adamw else 0.0),
                       decoupled_weight_decay=adamw,
                       maximize=kw.get("maximize", False))
    cls = torch.optim.AdamW if adamw else torch.optim.Adam  # AdamW's default decay: 0.01
    _optim_run(lambda p: cls(p, **kw), step)


def test_fused_steps_work_on_strided_and_half_params() -> None:
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    p = F("t")(td.tensor(base))  # a transposed view: the composed path
    p.grad = td.tensor(np.ones((3, 2), np.float32))
    F("sgd_step")(p, n=1, lr=0.5)
    np.testing.assert_allclose(p.numpy(), base.T - 0.5)
    h = td.tensor(np.ones(4, np.float32), dtype=td.bfloat16)
    m, v = td.tensor(np.zeros(4, np.float32)), td.tensor(np.zeros(4, np.float32))
    h.grad = F("ones_like")(h)
    F("adam_step")(h, F("to")(m, dtype=td.bfloat16), F("to")(v, dtype=td.bfloat16),
                   td.zeros((), device="cpu"), n=1, lr=0.1)
    np.testing.assert_allclose(h.numpy().astype(np.float32), np.full(4, 0.9), rtol=1e-2)


def test_adam_step_counts_must_be_cpu_scalars() -> None:
    # Note [Adam step counts]: the op reads each count on the host; a wrong one is named.
    p = td.tensor(np.ones(3, np.float32))
    p.grad = td.tensor(np.ones(3, np.float32))
    m, v = td.zeros(3), td.zeros(3)
    with pytest.raises(td.Error, match=r"adam_step at .*step count 0 must be a one-element"):
        F("adam_step")(p, m, v, td.zeros(2, device="cpu"), n=1)
        td.default_session().synchronize()
    with pytest.raises(td.Error, match=r"adam_step at .*step count 0 is -1"):
        F("adam_step")(p, m, v, td.full((), -1.0, device="cpu"), n=1)
        td.default_session().synchronize()
    np.testing.assert_array_equal(p.numpy(), np.ones(3, np.float32))  # nothing stepped
