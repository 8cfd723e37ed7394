"""Note [One linear] (tensord/torch/_linear.py): ``F.linear`` on the device is one daemon Call
with one gradient node. Values and gradients (first and second order) against local PyTorch,
for the shapes the kernel takes and the ones it leaves to PyTorch's composite."""

from __future__ import annotations

from typing import Any, Optional

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

D = "tensord"

# (input shape, weight shape, bias shape or None)
SHAPES = [((4, 3), (5, 3), (5,)), ((4, 3), (5, 3), None), ((2, 4, 3), (5, 3), (5,)),
          ((2, 2, 4, 3), (6, 3), None), ((3,), (5, 3), (5,)), ((4, 3), (3,), None)]


def _leaves(shapes: tuple, want: tuple) -> tuple:
    cpu = [None if s is None else torch.randn(*s).requires_grad_(w)
           for s, w in zip(shapes, want)]
    dev = [None if t is None else t.detach().to(D).requires_grad_(t.requires_grad)
           for t in cpu]
    return cpu, dev


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("want", [(True, True, True), (False, True, True), (True, False, False)],
                         ids=["all", "params", "input"])
def test_values_and_gradients(production: Any, shapes: tuple, want: tuple) -> None:
    for call in range(4):  # the later calls take the recorded Call
        cpu, dev = _leaves(shapes, want)
        out_c, out_d = F.linear(*cpu), F.linear(*dev)
        torch.testing.assert_close(out_d.detach().cpu(), out_c.detach(), msg=f"call {call}")
        g = torch.randn(out_c.shape)
        out_c.backward(g)
        out_d.backward(g.to(D))
        for c, d in zip(cpu, dev):
            if c is not None and c.requires_grad:
                torch.testing.assert_close(d.grad.cpu(), c.grad, msg=f"call {call}")


def test_one_gradient_node(production: Any) -> None:
    x = torch.randn(4, 3, device=D)
    w = torch.randn(5, 3, device=D, requires_grad=True)
    out = F.linear(x, w, torch.randn(5, device=D))
    assert "Linear" in type(out.grad_fn).__name__
    assert out.grad_fn.next_functions[1][0] is not None  # the weight's accumulator


def test_second_order(production: Any) -> None:
    xc = torch.randn(3, 2, 4, requires_grad=True)
    wc = torch.randn(5, 4, requires_grad=True)
    bc = torch.randn(5, requires_grad=True)
    xd, wd, bd = (t.detach().to(D).requires_grad_() for t in (xc, wc, bc))

    def grads(x: Any, w: Any, b: Any) -> Any:
        y = F.linear(x, w, b).tanh().sum()
        gx, gw = torch.autograd.grad(y, (x, w), create_graph=True)
        return (gx.pow(2).sum() + gw.pow(2).sum(), torch.autograd.grad(
            gx.pow(2).sum() + gw.pow(2).sum(), (x, w, b)))

    (vc, gc), (vd, gd) = grads(xc, wc, bc), grads(xd, wd, bd)
    torch.testing.assert_close(vd.detach().cpu(), vc.detach())
    for c, d in zip(gc, gd):
        torch.testing.assert_close(d.cpu(), c)


def test_no_grad_and_inference(production: Any) -> None:
    x, w, b = torch.randn(4, 3), torch.randn(5, 3), torch.randn(5)
    dx, dw, db = x.to(D), w.to(D).requires_grad_(), b.to(D)
    for _ in range(3):
        with torch.no_grad():
            out = F.linear(dx, dw, db)
        assert out.grad_fn is None and not out.requires_grad
        torch.testing.assert_close(out.cpu(), F.linear(x, w, b))
        plain = dw.detach()
        with torch.inference_mode():
            out = F.linear(dx, plain, db)
        torch.testing.assert_close(out.cpu(), F.linear(x, w, b))


def test_a_dispatch_mode_sees_linear(production: Any) -> None:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Names(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list = []

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Optional[dict] = None) -> Any:
            self.seen.append(func)
            return func(*args, **(kwargs or {}))

    x, w = torch.randn(4, 3), torch.randn(5, 3)
    with Names() as mode:
        out = F.linear(x.to(D), w.to(D))
    assert torch.ops.aten.linear.default in mode.seen
    torch.testing.assert_close(out.cpu(), F.linear(x, w))


def test_errors_are_pytorchs(production: Any) -> None:
    with pytest.raises(RuntimeError):
        F.linear(torch.randn(4, 3, device=D), torch.randn(5, 2, device=D))


# Biases the one Call does not take (2-d, or one element broadcast over the features), which
# PyTorch's composite runs; a non-contiguous weight, which the Call takes.
@pytest.mark.parametrize("bias_shape", [(1, 5), (1,), (5,)], ids=str)
def test_bias_shapes_at_the_kernels_edge(production: Any, bias_shape: tuple) -> None:
    x, w, b = torch.randn(4, 3), torch.randn(3, 5).t(), torch.randn(*bias_shape)
    for call in range(3):
        out = F.linear(x.to(D), w.to(D), b.to(D))
        torch.testing.assert_close(out.cpu(), F.linear(x, w, b), msg=f"call {call}")


def test_mixed_dtypes_fail_as_pytorchs(production: Any) -> None:
    x, w = torch.randn(4, 3), torch.randn(5, 3, dtype=torch.float64)
    with pytest.raises(RuntimeError) as cpu:
        F.linear(x, w)
    with pytest.raises(RuntimeError) as dev:
        F.linear(x.to(D), w.to(D))
    assert type(dev.value) is type(cpu.value)


@pytest.mark.parametrize("product", [
    lambda a, b: torch.mm(a, b), lambda a, b: torch.bmm(a[None], b[None]),
    lambda a, b: torch.addmm(torch.zeros(4, 5, dtype=a.dtype, device=a.device), a, b),
    lambda a, b: torch.addmm(torch.zeros(4, 5, dtype=b.dtype, device=b.device), a, b)],
    ids=["mm", "bmm", "addmm", "addmm_self_as_mat2"])
def test_products_of_mixed_dtypes_fail_as_pytorchs(production: Any, product: Any) -> None:
    a, b = torch.randn(4, 3), torch.randn(3, 5, dtype=torch.float64)
    with pytest.raises(RuntimeError):
        product(a, b)
    with pytest.raises(RuntimeError):
        product(a.to(D), b.to(D))
    same = product(a.to(D), b.to(a.dtype).to(D))  # one dtype: the product as ever
    torch.testing.assert_close(same.cpu(), product(a, b.to(a.dtype)))
