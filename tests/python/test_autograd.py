"""The autograd API against PyTorch: gradient values, retain_graph, create_graph, autograd.grad,
detach, grad modes, requires_grad_, accumulation, zero_grad."""

import numpy as np
import pytest
import torch

import tensord as td
from autograd_support import grad_session  # noqa: F401 (fixture)
from helpers import from_torch

pytestmark = pytest.mark.usefixtures("grad_session")


def pair(a: np.ndarray, requires_grad: bool = True):
    """The same leaf in tensord and torch."""
    return (td.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def close(t: td.Tensor, want: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(t.numpy(), want.detach().numpy(), rtol=rtol, atol=atol)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_grad_values_through_a_small_model():
    x = rand(8, 5, seed=1)
    w1, tw1 = pair(rand(5, 16, seed=2))
    b1, tb1 = pair(rand(16, seed=3))
    w2, tw2 = pair(rand(16, 3, seed=4))
    y = np.array([0, 2, 1, 1, 0, 2, 2, 1])

    def model(lib, w1, b1, w2):
        h = lib.nn.functional.relu(lib.tensor(x) @ w1 + b1)
        logits = lib.tanh(h) @ w2
        return lib.nn.functional.cross_entropy(logits, lib.tensor(y)) + (w1 * w1).mean()

    loss, tloss = model(td, w1, b1, w2), model(torch, tw1, tb1, tw2)
    loss.backward()
    tloss.backward()
    assert loss.item() == pytest.approx(tloss.item(), rel=1e-5)
    for a, b in ((w1, tw1), (b1, tb1), (w2, tw2)):
        close(a.grad, b.grad)


def test_matmul_grads_of_transposed_operands_match_pytorch():
    # Either operand a transposed view (as linear's weight.t()): the daemon computes its
    # gradient in that layout (MatmulGrad); values, second backward and linear as PyTorch.
    a, ta = pair(rand(6, 4, seed=2))
    b, tb = pair(rand(5, 6, seed=3))
    c = rand(4, 5, seed=4)
    for _ in range(2):  # the second backward accumulates into the first's .grad
        (a.t() @ b.t() * td.tensor(c)).sum().backward()
        (ta.t() @ tb.t() * torch.tensor(c)).sum().backward()
    close(a.grad, ta.grad)
    close(b.grad, tb.grad)
    x, tx = pair(rand(7, 6, seed=5))
    w, tw = pair(rand(3, 6, seed=6))
    (td.nn.functional.linear(x, w) ** 2).sum().backward()
    (torch.nn.functional.linear(tx, tw) ** 2).sum().backward()
    close(w.grad, tw.grad, rtol=1e-4)
    close(x.grad, tx.grad, rtol=1e-4)


def test_leaves_flags_and_grad_fn():
    x = td.tensor([1.0, 2.0], requires_grad=True)
    c = td.tensor([3.0, 4.0])
    y = x * c
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert c.is_leaf and not c.requires_grad
    assert not y.is_leaf and y.requires_grad
    assert y.grad_fn is not None and y.grad_fn.name().endswith("Backward0")
    assert not (c * 2).requires_grad
    assert x.grad is None


def test_creation_ops_with_requires_grad():
    for t in (td.zeros(2, 3, requires_grad=True), td.randn(4, requires_grad=True),
              td.ones_like(td.ones(2), requires_grad=True)):
        assert t.requires_grad and t.is_leaf
    z = td.zeros(3, requires_grad=True)
    (z + 1).sum().backward()
    assert z.grad.tolist() == [1.0, 1.0, 1.0]


def test_backward_with_gradient_for_non_scalars():
    a = rand(3, 4)
    x, tx = pair(a)
    g = rand(3, 4, seed=9)
    (x.exp() * 2).backward(td.tensor(g))
    (tx.exp() * 2).backward(torch.tensor(g))
    close(x.grad, tx.grad)
    (x * 2).backward()  # not waited for: the next synchronize raises its error
    with pytest.raises(RuntimeError, match="scalar"):
        td.synchronize()


def test_grads_accumulate_and_retain_graph():
    x, tx = pair(rand(5))
    y, ty = (x * x).sum(), (tx * tx).sum()
    y.backward(retain_graph=True)
    y.backward()
    ty.backward(retain_graph=True)
    ty.backward()
    close(x.grad, tx.grad)  # 2 * 2x
    y.backward()  # the graph was freed by the second backward
    with pytest.raises(td.Error):
        td.synchronize()  # backward() does not wait: the next synchronize raises its error
    z = (x * 3).sum()  # the session goes on
    z.backward()
    close(x.grad, tx.grad + 3)


def test_backward_on_a_tensor_without_grad_is_an_error():
    td.ones(3).sum().backward()
    with pytest.raises(td.Error):
        td.synchronize()
    assert (td.ones(2) + 1).tolist() == [2.0, 2.0]


def test_create_graph_second_order():
    x, tx = pair(rand(4))
    (g,) = td.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tx ** 3).sum(), tx, create_graph=True)
    close(g, tg)
    assert g.requires_grad
    (g2,) = td.autograd.grad(g.sum(), x)
    (tg2,) = torch.autograd.grad(tg.sum(), tx)
    close(g2, tg2)  # 6x
    x.grad = None
    gg = td.autograd.grad((x.sin() * x).sum(), x, create_graph=True)[0]
    gg.sum().backward()
    tgg = torch.autograd.grad((tx.sin() * tx).sum(), tx, create_graph=True)[0]
    tgg.sum().backward()
    close(x.grad, tx.grad, rtol=1e-4, atol=1e-5)


def test_autograd_grad_several_inputs_and_unused():
    x, tx = pair(rand(3))
    w, tw = pair(rand(3, seed=5))
    u = td.tensor([1.0], requires_grad=True)
    out = (x * w).sum() + (w * w).sum()
    gx, gw = td.autograd.grad(out, [x, w], retain_graph=True)
    tgx, tgw = torch.autograd.grad((tx * tw).sum() + (tw * tw).sum(), [tx, tw])
    close(gx, tgx)
    close(gw, tgw)
    assert x.grad is None and w.grad is None  # autograd.grad leaves .grad alone
    gx2, gu = td.autograd.grad(out, [x, u], allow_unused=True, retain_graph=True)
    close(gx2, tgx)
    assert gu is None
    with pytest.raises((RuntimeError, td.Error)):
        td.autograd.grad(out, [x, u])


def test_grad_outputs():
    x, tx = pair(rand(2, 3))
    go = rand(2, 3, seed=3)
    (g,) = td.autograd.grad(x * x, x, grad_outputs=td.tensor(go))
    (tg,) = torch.autograd.grad(tx * tx, tx, grad_outputs=torch.tensor(go))
    close(g, tg)


def test_detach():
    x, tx = pair(rand(4))
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    y = (x * d).sum()  # d is a constant: grad is d
    y.backward()
    close(x.grad, tx.detach())
    assert not (d * 2).requires_grad


def test_no_grad_enable_grad_set_grad_enabled():
    x = td.ones(2, requires_grad=True)
    with td.no_grad():
        y = x * 2
        with td.enable_grad():
            z = x * 2
    assert not y.requires_grad and z.requires_grad

    @td.no_grad()
    def f(t):
        return t * 3
    assert not f(x).requires_grad
    td.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
        assert not td.is_grad_enabled()
    finally:
        td.set_grad_enabled(True)
    with td.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    assert (x + 1).requires_grad


def test_requires_grad_setter_and_method():
    x = td.tensor([1.0, 2.0])
    assert not x.requires_grad
    assert x.requires_grad_() is x
    assert x.requires_grad
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    x.requires_grad = False
    assert not x.requires_grad and not (x * 2).requires_grad
    y = td.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)


def test_grad_setter_and_zero_grad():
    lin = td.nn.Linear(3, 2)
    lin(td.ones(4, 3)).sum().backward()
    assert lin.weight.grad is not None
    lin.zero_grad(set_to_none=False)
    assert lin.weight.grad.tolist() == [[0.0] * 3] * 2
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None
    lin.bias.grad = td.ones(2)
    assert lin.bias.grad.tolist() == [1.0, 1.0]
    lin(td.ones(1, 3)).sum().backward()  # accumulates into the assigned grad
    assert lin.bias.grad.tolist() == [2.0, 2.0]
    lin.bias.grad = None
    assert lin.bias.grad is None


def test_leaf_grads_match_torch_for_broadcast_ops():
    a, ta = pair(rand(4, 1))
    b, tb = pair(rand(1, 3, seed=4))
    ((a + b) * (a - b)).mean().backward()
    ((ta + tb) * (ta - tb)).mean().backward()
    close(a.grad, ta.grad)
    close(b.grad, tb.grad)


def test_parameter_is_a_leaf_alias():
    t = from_torch(torch.arange(4.0))
    p = td.nn.Parameter(t)
    assert isinstance(p, td.Tensor) and p.requires_grad and p.is_leaf
    (p * p).sum().backward()
    assert p.grad.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert td.nn.Parameter(t, requires_grad=False).requires_grad is False


def test_requires_grad_on_a_non_leaf_that_requires_grad_is_a_no_op():
    x = td.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).requires_grad_()
    assert y.requires_grad and not y.is_leaf
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    td.synchronize()  # no error was left behind


# max_pool2d's backward takes the window maxima from the saved output (PyTorch's CPU rule: the
# gradient goes to the last NaN of a window, else its first maximum). Ties come from values drawn
# from a small set; windows overlap, pad, dilate and run past the edge in ceil mode.
POOL_GEOMETRIES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2)),
    dict(kernel_size=2, stride=2, dilation=2),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=1, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("data", ["ties", "nans", "random"])
@pytest.mark.parametrize("geometry", POOL_GEOMETRIES, ids=repr)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool2d_grad_matches_torch_on_ties_and_nans(geometry, data, dtype):
    rng = np.random.default_rng(7)
    x = rng.integers(0, 4, size=(2, 3, 9, 8)).astype(dtype)
    if data == "nans":
        x[rng.random(x.shape) < 0.08] = np.nan
    elif data == "random":
        x = rng.standard_normal(x.shape).astype(dtype)
    a, ta = pair(x)
    y = td.nn.functional.max_pool2d(a, **geometry)
    ty = torch.nn.functional.max_pool2d(ta, **geometry)
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    w = rng.standard_normal(ty.shape).astype(dtype)
    (y * td.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=0)


@pytest.mark.parametrize("geometry", POOL_GEOMETRIES, ids=repr)
def test_max_pool2d_return_indices_matches_torch(geometry):
    # The native client's return_indices=True: max_pool2d_with_indices, PyTorch's indices (its
    # first maximum, last NaN) and its backward at them (3-d input: the indices of each plane).
    rng = np.random.default_rng(8)
    x = rng.integers(0, 4, size=(3, 9, 8)).astype(np.float32)
    x[rng.random(x.shape) < 0.08] = np.nan
    a, ta = pair(x)
    y, i = td.nn.MaxPool2d(**geometry, return_indices=True)(a)
    ty, ti = torch.nn.MaxPool2d(**geometry, return_indices=True)(ta)
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    w = rng.standard_normal(ty.shape).astype(np.float32)
    (y * td.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())


@pytest.mark.parametrize("output_size", [(4, 3), (7, 11), 1], ids=repr)
def test_adaptive_max_pool2d_matches_torch_on_ties_and_nans(output_size):
    # The native client's adaptive_max_pool2d: PyTorch's windows and indices (first maximum,
    # last NaN) and the gradient at them, 3-d input, outputs smaller and larger than the input.
    rng = np.random.default_rng(9)
    x = rng.integers(0, 4, size=(3, 9, 8)).astype(np.float32)
    x[rng.random(x.shape) < 0.08] = np.nan
    a, ta = pair(x)
    y, i = td.nn.functional.adaptive_max_pool2d(a, output_size, return_indices=True)
    ty, ti = torch.nn.functional.adaptive_max_pool2d(ta, output_size, return_indices=True)
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    w = rng.standard_normal(ty.shape).astype(np.float32)
    (y * td.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())


@pytest.mark.parametrize("divisor", [3, -2])
def test_avg_pool2d_divisor_override_matches_torch(divisor):
    x = rand(2, 3, 9, 8, seed=6)
    a, ta = pair(x)
    kw = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, divisor_override=divisor)
    y = td.nn.functional.avg_pool2d(a, **kw)
    ty = torch.nn.functional.avg_pool2d(ta, **kw)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-6, atol=1e-6)
    w = rand(*ty.shape, seed=7)
    (y * td.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_max_pool2d_grad_after_the_output_is_modified_in_place():
    # relu_ on the pooled output (nn.ReLU(inplace=True) after a pool): the backward recomputes
    # the maxima instead of reading the modified output, as PyTorch (which saves indices) allows.
    x = rand(2, 3, 8, 8, seed=5)
    a, ta = pair(x)
    y = td.nn.functional.max_pool2d(a, 2)
    ty = torch.nn.functional.max_pool2d(ta, 2)
    td.nn.functional.relu(y, inplace=True)
    torch.nn.functional.relu(ty, inplace=True)
    w = rand(*ty.shape, seed=6)
    (y * td.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    close(a.grad, ta.grad)
