"""lerp, addcmul, addcdiv and their in-place forms (the optimizers' pointwise steps): the
device's composites against local PyTorch, forward, in place, through views, and backward."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


def _inputs(*shapes: tuple, seed: int = 0) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g) for s in shapes]


@pytest.mark.parametrize("weight", [0.1, 0.5, 0.9, -0.3, 1.7])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((1, 4), (3, 1))])
def test_lerp_scalar_weight(td: object, weight: float, shapes: tuple) -> None:
    a, b = _inputs(*shapes)
    got = torch.lerp(a.to(D), b.to(D), weight).cpu()
    torch.testing.assert_close(got, torch.lerp(a, b, weight), rtol=1e-6, atol=1e-6)
    if torch.broadcast_shapes(*shapes) == a.shape:
        x = a.to(D)
        x.lerp_(b.to(D), weight)
        torch.testing.assert_close(x.cpu(), a.clone().lerp_(b, weight), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("value", [1, 0.001, -2.5])
@pytest.mark.parametrize("shapes", [((5,), (5,), (5,)), ((2, 5), (5,), (2, 1)),
                                    ((1, 5), (2, 5), (2, 5))])
def test_addcmul_addcdiv(td: object, op: str, value: float, shapes: tuple) -> None:
    x, t1, t2 = _inputs(*shapes, seed=1)
    t2 = t2.abs() + 0.5  # a divisor away from 0
    ref = getattr(torch, op)(x, t1, t2, value=value)
    got = getattr(torch, op)(x.to(D), t1.to(D), t2.to(D), value=value)
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-6, atol=1e-6)
    if ref.shape == x.shape:
        base = torch.zeros(3, *x.shape)
        base[1] = x
        y = base.to(D)
        view = y[1]  # in place through a view: the base sees it
        getattr(view, op + "_")(t1.to(D), t2.to(D), value=value)
        base[1] = ref
        torch.testing.assert_close(y.cpu(), base, rtol=1e-6, atol=1e-6)


def test_other_dtypes_and_tensor_weights_take_the_decomposition(td: object) -> None:
    a, b, w = _inputs((4,), (4,), (4,), seed=2)
    got = torch.lerp(a.to(D), b.to(D), w.to(D)).cpu()  # lerp.Tensor
    torch.testing.assert_close(got, torch.lerp(a, b, w), rtol=1e-6, atol=1e-6)
    x, t1, t2 = a.double(), b, w.abs() + 1  # mixed dtypes: promotion as PyTorch's
    got = torch.addcdiv(x.to(D), t1.to(D), t2.to(D), value=0.5)
    ref = torch.addcdiv(x, t1, t2, value=0.5)
    assert got.dtype == ref.dtype == torch.float64
    torch.testing.assert_close(got.cpu(), ref)


def test_gradients_match(td: object) -> None:
    a, b, c = _inputs((3, 4), (3, 4), (4,), seed=3)
    c = c.abs() + 0.5

    def grads(device: str) -> list:
        xs = [t.to(device).requires_grad_() for t in (a, b, c)]
        y = torch.lerp(xs[0], xs[1], 0.3) * torch.addcdiv(xs[0], xs[1], xs[2], value=0.7)
        (y + torch.addcmul(xs[0], xs[1], xs[2], value=-1.5)).sum().backward()
        return [x.grad.cpu() for x in xs]

    for got, ref in zip(grads(D), grads("cpu")):
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)


def test_adam_step_matches_and_stays_on_the_daemon(td: object) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 3)
    ref = torch.nn.Linear(6, 3)
    ref.load_state_dict(model.state_dict())
    model = model.to(D)
    x = torch.randn(5, 6)
    for m, xin in ((model, x.to(D)), (ref, x)):
        opt = torch.optim.AdamW(m.parameters(), lr=0.1, foreach=False)
        for _ in range(3):
            opt.zero_grad()
            m(xin).square().mean().backward()
            opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-6)
