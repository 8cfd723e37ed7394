"""Note [Direct calls] (tensord/torch/_direct.py) for in-place ops and list arguments: a
replayed in-place Call returns its ``self`` (PyTorch bumps the version counter), writes through
views into their base, and autograd sees it as on the CPU; ``cat``/``stack`` replay their lists'
tensors in order, a list of another length being another key. Local PyTorch is the oracle; each
loop runs the op more than twice with the same key (the third call takes the recorded Call)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from conftest import recorded

torch = pytest.importorskip("torch")

D = "tensord"

def _foreach_mul_(x: Any, k: float) -> Any:
    torch._foreach_mul_([x], k)  # returns None
    return x


# (x, y, k) -> the in-place result; ``x`` is written, ``k`` changes on every call.
INPLACE = {
    "add_": lambda x, y, k: x.add_(y),
    "add_alpha_": lambda x, y, k: x.add_(y, alpha=k),
    "add_number_": lambda x, y, k: x.add_(k),
    "sub_": lambda x, y, k: x.sub_(y),
    "mul_": lambda x, y, k: x.mul_(k),
    "mul_tensor_": lambda x, y, k: x.mul_(y),
    "div_": lambda x, y, k: x.div_(k),
    "clamp_": lambda x, y, k: x.clamp_(min=-k, max=k),
    "relu_": lambda x, y, k: x.relu_(),
    "copy_": lambda x, y, k: x.copy_(y),
    "zero_": lambda x, y, k: x.zero_(),
    "fill_": lambda x, y, k: x.fill_(k),
    "foreach_mul_": lambda x, y, k: _foreach_mul_(x, k),
}
KS = (0.5, 2.0, -1.5, 0.25, 3.0)


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_replays_return_self_and_count_versions(production: Any, name: str) -> None:
    fn: Callable[..., Any] = INPLACE[name]
    n = 3 + sorted(INPLACE).index(name)
    x, y = torch.randn(2, n), torch.randn(2, n)
    dx, dy = x.to(D), y.to(D)
    before = recorded(production)
    for k in KS:
        v0, dv0 = x._version, dx._version
        fn(x, y, k)
        fn(dx, dy, k)
        assert dx._version - dv0 == x._version - v0 > 0
        torch.testing.assert_close(dx.cpu(), x, msg=f"number {k}")
    if name not in ("copy_", "zero_", "fill_"):  # the device's handlers, not rules
        assert recorded(production) > before, "no call took the recorded path"


def test_dispatch_returns_the_written_self(production: Any) -> None:
    # PyTorch's dispatcher returns an in-place op's first argument whatever the kernel returns;
    # the device's own callers of ``dispatch`` (``_foreach``, ``_twins``) see what it returns.
    aten = torch.ops.aten
    x, y = torch.randn(7), torch.randn(7)
    dx, dy = x.to(D), y.to(D)
    for k in KS:
        assert production.dispatch(aten.add_.Tensor, (dx, dy), {"alpha": k}) is dx
        assert production.dispatch(aten.mul_.Tensor, (dx, k), {}) is dx
        x.add_(y, alpha=k).mul_(k)
    torch.testing.assert_close(dx.cpu(), x)


def test_inplace_writes_through_views_into_their_base(production: Any) -> None:
    base, y = torch.randn(8, 4), torch.randn(2, 4)
    dbase, dy = base.to(D), y.to(D)
    older = dbase[2:4]  # a view made before the writes
    for i, k in zip((0, 2, 5, 2, 4), KS):  # one key: the views' offsets are not in it
        base[i:i + 2].mul_(k).add_(y, alpha=k)
        dview = dbase[i:i + 2]
        assert dview.mul_(k).add_(dy, alpha=k) is dview
        torch.testing.assert_close(dbase.cpu(), base, msg=f"offset {i}")
        torch.testing.assert_close(older.cpu(), base[2:4])
    col = dbase[:, 1]  # a strided view
    for k in KS:
        col.add_(k)
        base[:, 1].add_(k)
    torch.testing.assert_close(dbase.cpu(), base)


def test_inplace_on_itself(production: Any) -> None:
    x = torch.randn(3, 3)
    dx = x.to(D)
    for _ in range(4):  # one payload as both arguments: run by the rule every time
        x.add_(x)
        dx.add_(dx)
        x.mul_(x.tanh())
        dx.mul_(dx.tanh())
    torch.testing.assert_close(dx.cpu(), x)


def test_inplace_in_autograd_graphs(production: Any) -> None:
    w0, y0 = torch.randn(4, 3), torch.randn(4, 3)
    for k in KS:
        def loss(w: Any, y: Any) -> Any:
            h = w * 1.0
            h.add_(y, alpha=k).mul_(k)
            h.relu_()
            return (h * h).sum()
        w, cw = w0.to(D).requires_grad_(), w0.clone().requires_grad_()
        loss(w, y0.to(D)).backward()
        loss(cw, y0).backward()
        torch.testing.assert_close(w.grad.cpu(), cw.grad, msg=f"number {k}")
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.add_(1.0)


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_optimizers_with_a_changing_lr(production: Any, foreach: bool, opt: str) -> None:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    model.load_state_dict(ref.state_dict())
    model.to(D)
    make = ((lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=foreach))
            if opt == "sgd" else (lambda p: torch.optim.Adam(p, lr=0.01, foreach=foreach)))
    o_ref, o_dev = make(ref.parameters()), make(model.parameters())
    x, y = torch.randn(6, 5), torch.randn(6, 2)
    dx, dy = x.to(D), y.to(D)
    for step in range(6):
        for o in (o_ref, o_dev):
            for g in o.param_groups:
                g["lr"] *= 0.7  # a new number every step
        for m, o, a, b in ((ref, o_ref, x, y), (model, o_dev, dx, dy)):
            o.zero_grad(set_to_none=False)
            torch.nn.functional.mse_loss(m(a), b).backward()
            o.step()
        for p, q in zip(ref.parameters(), model.parameters()):
            torch.testing.assert_close(q.detach().cpu(), p.detach(), msg=f"step {step}")


@pytest.mark.parametrize("op", ["cat", "stack"])
def test_lists_of_varying_length(production: Any, op: str) -> None:
    fn = getattr(torch, op)
    before = recorded(production)
    for n in (2, 3, 2, 4, 3, 2, 4, 3):  # each length a key of its own, each seen again
        xs = [torch.randn(2, 5) for _ in range(n)]
        dxs = [x.to(D) for x in xs]
        for dim in (0, 1):
            torch.testing.assert_close(fn(dxs, dim).cpu(), fn(xs, dim), msg=f"{n} tensors")
    assert recorded(production) > before, "no call took the recorded path"


def test_list_elements_fill_their_own_inputs(production: Any) -> None:
    a, b, c = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
    da, db, dc = a.to(D), b.to(D), c.to(D)
    # One key for all: [a, a] shares a payload (not recorded), the others fill in order.
    for xs, dxs in (([a, a], [da, da]), ([a, b], [da, db]), ([b, a], [db, da]),
                    ([a, a], [da, da]), ([c, b], [dc, db]), ([b, c], [db, dc])):
        torch.testing.assert_close(torch.cat(dxs).cpu(), torch.cat(xs))
    views = [dc[:1], dc[1:]]  # elements that are views of one base
    for _ in range(3):
        torch.testing.assert_close(torch.cat(views[::-1]).cpu(), torch.cat([c[1:], c[:1]]))


def test_list_gradients(production: Any) -> None:
    for k in KS:
        xs = [torch.randn(3, 2) for _ in range(3)]
        cpu = [x.clone().requires_grad_() for x in xs]
        dev = [x.to(D).requires_grad_() for x in xs]
        (torch.stack(cpu, 1) * k).pow(2).sum().backward()
        (torch.stack(dev, 1) * k).pow(2).sum().backward()
        for c, d in zip(cpu, dev):
            torch.testing.assert_close(d.grad.cpu(), c.grad, msg=f"number {k}")
