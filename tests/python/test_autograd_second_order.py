"""Second-order gradients through the fused CPU rows (layer_norm, cross_entropy, nll_loss, gelu)
against PyTorch and finite differences; class weights that require grad are refused.

The fused backward rows (native_layer_norm_backward, fused_cross_entropy_backward,
gelu_backward) have no gradients of their own: a backward recorded with ``create_graph`` takes
the composite formulas instead (Note [Second-order fused rows], runtime/ops/derivatives_nn.cc).
Each case is a gradient penalty: ``g = d loss/d x`` with ``create_graph``, then
``d (sum(g * g) + sum(g * v))/d params``, in float64 against ``torch`` on the same values, and
against central differences of the daemon's own first-order gradients (which run the fused
rows), the finite-difference half of ``torch.autograd.gradgradcheck``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np
import pytest
import torch

import tensord as td
from autograd_support import grad_session  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("grad_session")

Loss = Callable[[Any, List[Any], Any], Any]  # (library, params, constants) -> scalar loss


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _layer_norm(lib: Any, p: List[Any], k: Dict[str, Any]) -> Any:
    y = lib.nn.functional.layer_norm(p[0], k["shape"], *p[1:], eps=1e-5)
    return (y * k["r"]).sum()


def _ce(**kw: Any) -> Loss:
    def loss(lib: Any, p: List[Any], k: Dict[str, Any]) -> Any:
        w = k.get("w")
        out = lib.nn.functional.cross_entropy(p[0], k["t"], weight=w, **kw)
        return (out * k["r"]).sum() if kw.get("reduction") == "none" else out * 1.5
    return loss


def _nll(**kw: Any) -> Loss:
    def loss(lib: Any, p: List[Any], k: Dict[str, Any]) -> Any:
        logp = lib.log_softmax(p[0], 1 if p[0].dim() > 1 else 0)
        out = lib.nn.functional.nll_loss(logp, k["t"], weight=k.get("w"), **kw)
        return (out * k["r"]).sum() if kw.get("reduction") == "none" else out
    return loss


def _gelu(approximate: str) -> Loss:
    def loss(lib: Any, p: List[Any], k: Dict[str, Any]) -> Any:
        return (lib.nn.functional.gelu(p[0], approximate=approximate) * k["r"]).sum()
    return loss


def _targets(shape: tuple, classes: int, seed: int, ignore: bool = False) -> np.ndarray:
    t = np.asarray(_rng(seed).integers(0, classes, size=shape))
    if ignore and t.size > 1:
        t.reshape(-1)[1] = -100
    return t


def _case(name: str) -> tuple:
    """(loss, params as numpy, constants as numpy)."""
    r = _rng(3)
    if name.startswith("layer_norm"):
        x = r.standard_normal((3, 4, 5))
        params = [x] if name == "layer_norm" else [x, r.standard_normal((4, 5)) + 1,
                                                   r.standard_normal((4, 5))]
        return _layer_norm, params, {"shape": [4, 5], "r": r.standard_normal((3, 4, 5))}
    if name.startswith("gelu"):
        return (_gelu(name.split("-")[1]), [r.standard_normal((4, 6)) * 2],
                {"r": r.standard_normal((4, 6))})
    lib_loss = {
        "ce": _ce(), "ce-sum": _ce(reduction="sum"),
        "ce-none-smooth": _ce(reduction="none", label_smoothing=0.2),
        "ce-weight-smooth-ignore": _ce(label_smoothing=0.1),
        "ce-4d-weight-none": _ce(reduction="none"),
        "ce-1d": _ce(label_smoothing=0.3),
        "nll": _nll(), "nll-weight-ignore": _nll(), "nll-4d-none": _nll(reduction="none"),
    }[name]
    c = 5
    shape = {"ce-4d-weight-none": (2, c, 3, 2), "nll-4d-none": (2, c, 2, 3),
             "ce-1d": (c,)}.get(name, (6, c))
    tshape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    k: Dict[str, Any] = {"t": _targets(tshape, c, 4, ignore="ignore" in name),
                         "r": r.standard_normal(tshape)}
    if "weight" in name:
        k["w"] = r.uniform(0.3, 2.0, c)
    return lib_loss, [r.standard_normal(shape) * 2], k


CASES = ["layer_norm", "layer_norm-affine", "ce", "ce-sum", "ce-none-smooth",
         "ce-weight-smooth-ignore", "ce-4d-weight-none", "ce-1d", "nll", "nll-weight-ignore",
         "nll-4d-none", "gelu-none", "gelu-tanh"]


def _consts(lib: Any, k: Dict[str, Any]) -> Dict[str, Any]:
    out = {}
    for key, v in k.items():
        if isinstance(v, np.ndarray):
            v = torch.from_numpy(v) if lib is torch else td.tensor(v)
        out[key] = v
    return out


def _penalty(lib: Any, loss: Loss, params: List[Any], k: Dict[str, Any], v: Any) -> Any:
    """sum(g * g) + sum(g * v) with g = d loss/d params[0], recorded for a second order."""
    (g,) = lib.autograd.grad(loss(lib, params, k), params[0], create_graph=True)
    return (g * g).sum() + (g * v).sum()


@pytest.mark.parametrize("name", CASES)
def test_double_backward_matches_torch(name: str) -> None:
    loss, params, k = _case(name)
    v = _rng(7).standard_normal(params[0].shape)
    dp = [td.tensor(p, requires_grad=True) for p in params]
    tp = [torch.tensor(p, requires_grad=True) for p in params]
    # layer_norm's bias does not reach d loss/dx: unused on both sides
    got = td.autograd.grad(_penalty(td, loss, dp, _consts(td, k), td.tensor(v)), dp,
                           allow_unused=True)
    want = torch.autograd.grad(_penalty(torch, loss, tp, _consts(torch, k), torch.tensor(v)), tp,
                               allow_unused=True)
    for g, w in zip(got, want):
        if w is None:
            assert g is None or not np.any(g.numpy())
            continue
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", CASES)
def test_double_backward_matches_finite_differences(name: str) -> None:
    # d/dx <d loss/dx, v> by central differences of the daemon's first-order gradient (the
    # fused backward rows) against the recorded composite's second order.
    loss, params, k = _case(name)
    v = _rng(8).standard_normal(params[0].shape)
    kd = _consts(td, k)
    dp = [td.tensor(p, requires_grad=True) for p in params]
    (g,) = td.autograd.grad(loss(td, dp, kd), dp[0], create_graph=True)
    second = td.autograd.grad((g * td.tensor(v)).sum(), dp, allow_unused=True)
    analytic = [np.zeros(p.shape) if a is None else a.numpy() for a, p in zip(second, params)]

    def first_order(values: List[np.ndarray]) -> float:
        leaves = [td.tensor(p, requires_grad=True) for p in values]
        (g1,) = td.autograd.grad(loss(td, leaves, kd), leaves[0])
        return float((g1.numpy() * v).sum())

    eps = 1e-6
    for j, p in enumerate(params):
        flat = p.reshape(-1)
        for i in range(0, flat.size, max(1, flat.size // 10)):  # about ten elements each
            keep = flat[i]
            flat[i] = keep + eps
            up = first_order(params)
            flat[i] = keep - eps
            down = first_order(params)
            flat[i] = keep
            fd = (up - down) / (2 * eps)
            assert analytic[j].reshape(-1)[i] == pytest.approx(fd, rel=1e-5, abs=1e-6), (j, i)


@pytest.mark.parametrize("op", ["cross_entropy", "nll_loss"])
def test_class_weights_that_require_grad_are_refused(op: str) -> None:
    # PyTorch: "The function 'nll_loss_forward' is not differentiable with respect to argument
    # 'weight'"; the daemon names its op and the argument, and the session goes on.
    # grad_session's probe backward left a check unanswered; with it pending, an error caught
    # below was raised once more by the next read (a client quirk: see the report of 28's fix)
    td.synchronize()
    x = td.tensor(_rng(1).standard_normal((4, 3)), requires_grad=True)
    t = td.tensor(np.array([0, 2, 1, 1]))
    w = td.tensor(np.array([0.5, 1.0, 2.0]), requires_grad=True)
    f = getattr(td.nn.functional, op)
    with pytest.raises(td.Error) as err:
        f(x if op == "cross_entropy" else x.log_softmax(1), t, weight=w).item()
    message = str(err.value)
    assert op in message and "'weight'" in message and "detach" in message
    with td.no_grad():  # no graph recorded: allowed, as in PyTorch
        assert np.isfinite(f(x, t, weight=w).item())
    loss = f(x, t, weight=w.detach())
    loss.backward()
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tf = getattr(torch.nn.functional, op)
    tf(tx, torch.tensor([0, 2, 1, 1]), weight=torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64)).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9)
