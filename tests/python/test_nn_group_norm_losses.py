"""tensord.nn's GroupNorm and the losses BCELoss, SmoothL1Loss, HuberLoss and KLDivLoss (and
their functional forms) against torch 1.13: values and the gradients w.r.t. input, target
where PyTorch has one, and parameters; bad input."""

import numpy as np
import pytest
import torch

import tensord as td
from nn_compare import compare_function, compare_module, rand

pytestmark = pytest.mark.usefixtures("session")
F = td.nn.functional
TF = torch.nn.functional


@pytest.mark.parametrize("groups,channels,shape", [(2, 4, (3, 4, 5, 6)), (1, 3, (2, 3, 7)),
                                                   (6, 6, (2, 6)), (3, 6, (2, 6, 2, 3, 2))])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm(groups, channels, shape, affine):
    m = td.nn.GroupNorm(groups, channels, eps=1e-3, affine=affine)
    tm = torch.nn.GroupNorm(groups, channels, eps=1e-3, affine=affine)
    if affine:  # not the initial ones and zeros, so that the affine part is checked
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(rand(channels, seed=5)))
            tm.bias.copy_(torch.tensor(rand(channels, seed=6)))
    compare_module(m, tm, [rand(*shape) * 3 + 1], grad_inputs=[0])
    assert list(m.state_dict()) == list(tm.state_dict()) and repr(m) == repr(tm)


def test_group_norm_functional_and_errors():
    compare_function(lambda x, w, b: F.group_norm(x, 3, w, b, eps=1e-4),
                     lambda x, w, b: TF.group_norm(x, 3, w, b, eps=1e-4),
                     [rand(2, 6, 5), rand(6, seed=1), rand(6, seed=2)], grad_inputs=[0, 1, 2])
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups "
                                         r"\(4\)"):
        td.nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match=r"GroupNorm: expected input of shape \(N, 6, \*\), "
                                           r"but got input of shape \[2, 5, 3\]"):
        td.nn.GroupNorm(3, 6)(td.tensor(rand(2, 5, 3)))
    with pytest.raises(RuntimeError, match=r"group_norm: .*\[2, 5, 3\].*num_groups=2"):
        F.group_norm(td.tensor(rand(2, 5, 3)), 2)


# F.group_norm on the CPU is the fused native_group_norm row: odd HxW, one group, C == groups,
# weight and bias each absent, float64, an empty batch.
@pytest.mark.parametrize("shape,groups", [((3, 6, 5, 7), 3), ((2, 4, 9), 1), ((2, 5, 3), 5),
                                          ((0, 4, 3), 2), ((4, 6), 2)])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
@pytest.mark.parametrize("f64", [False, True])
def test_group_norm_functional_cases(shape, groups, affine, f64):
    c = shape[1]
    cast = (lambda a: a.astype(np.float64)) if f64 else (lambda a: a)
    w = cast(rand(c, seed=1, low=0.5, high=1.5)) if affine in ("both", "weight") else None
    b = cast(rand(c, seed=2)) if affine in ("both", "bias") else None
    params = [p for p in (w, b) if p is not None]

    def call(fn, x, *ps):
        it = iter(ps)
        weight = next(it) if w is not None else None
        bias = next(it) if b is not None else None
        if fn is TF.group_norm and weight is None and bias is not None:
            weight = torch.ones_like(bias)  # torch 1.13's backward fails on a bias alone
        return fn(x, groups, weight, bias, eps=1e-4)

    compare_function(lambda x, *ps: call(F.group_norm, x, *ps),
                     lambda x, *ps: call(TF.group_norm, x, *ps),
                     [cast(rand(*shape) * 2 + 1)] + params, grad_inputs=range(1 + len(params)),
                     rtol=1e-9 if f64 else 1e-4, atol=1e-10 if f64 else 1e-5)


def test_group_norm_non_contiguous_input():
    x = rand(5, 6, 4)  # the daemon's input is a transposed view [4, 6, 5]
    compare_function(lambda a, w, bb: F.group_norm(a.transpose(0, 2), 2, w, bb),
                     lambda a, w, bb: TF.group_norm(a.transpose(0, 2), 2, w, bb),
                     [x, rand(6, seed=1), rand(6, seed=2)], grad_inputs=[0, 1, 2])


def test_group_norm_bfloat16_computes_in_float32():
    """A bfloat16 input (and parameters) takes the fused row too, computed in float32 and
    rounded once: PyTorch's float32 result on the same rounded values, rounded."""
    x, w = rand(3, 6, 7) * 2 + 1, rand(6, seed=1, low=0.5, high=1.5)
    got = F.group_norm(td.tensor(x).bfloat16(), 3, td.tensor(w).bfloat16())
    tx, tw = (torch.tensor(v).bfloat16().float() for v in (x, w))
    want = TF.group_norm(tx, 3, tw).bfloat16()
    assert got.dtype == td.bfloat16
    torch.testing.assert_close(torch.from_numpy(got.float().numpy()), want.float(),
                               rtol=8e-3, atol=8e-3)


def test_group_norm_second_order():
    """create_graph through the fused row: the recorded composite's gradient of the gradient."""
    x, w, b = rand(2, 4, 3), rand(4, seed=1, low=0.5, high=1.5), rand(4, seed=2)
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    dx, dw, db = (td.tensor(v, requires_grad=True) for v in (x, w, b))
    gy = rand(2, 4, 3, seed=3)
    for fn, xs, make in ((TF.group_norm, (tx, tw, tb), torch.tensor),
                         (F.group_norm, (dx, dw, db), td.tensor)):
        y = fn(xs[0], 2, xs[1], xs[2])
        g = torch.autograd.grad if fn is TF.group_norm else td.autograd.grad
        gx, gw = g([(y * make(gy)).sum()], [xs[0], xs[1]], create_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward()
    assert db.grad is None and tb.grad is None  # the input's and weight's do not depend on it
    for d, t in ((dx, tx), (dw, tw)):
        np.testing.assert_allclose(d.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_loss(reduction, weighted):
    x, t = rand(4, 5, low=0.02, high=0.98), rand(4, 5, seed=1, low=0.0, high=1.0)
    w = rand(5, seed=2, low=0.5, high=2.0) if weighted else None
    m = td.nn.BCELoss(weight=None if w is None else td.tensor(w), reduction=reduction)
    tm = torch.nn.BCELoss(weight=None if w is None else torch.tensor(w), reduction=reduction)
    compare_module(m, tm, [x, t], grad_inputs=[0, 1])


def test_bce_target_shape_and_legacy_arguments():
    x = td.tensor(rand(4, low=0.1, high=0.9))
    with pytest.raises(ValueError, match=r"binary_cross_entropy: target of shape \[4, 1\] "
                                         r"differs from input of shape \[4\]"):
        F.binary_cross_entropy(x, td.tensor(rand(4, 1, low=0, high=1)))
    assert td.nn.BCELoss(size_average=False).reduction == "sum"


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [1.0, 0.5, 0.0])
def test_smooth_l1_loss(reduction, beta):
    compare_module(td.nn.SmoothL1Loss(reduction=reduction, beta=beta),
                   torch.nn.SmoothL1Loss(reduction=reduction, beta=beta),
                   [rand(3, 7), rand(3, 7, seed=1)], grad_inputs=[0, 1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [1.0, 0.3, 2.5])
def test_huber_loss(reduction, delta):
    compare_module(td.nn.HuberLoss(reduction=reduction, delta=delta),
                   torch.nn.HuberLoss(reduction=reduction, delta=delta),
                   [rand(3, 7), rand(3, 7, seed=1)], grad_inputs=[0, 1])


def test_regression_losses_reject_bad_options():
    x = td.tensor(rand(3))
    with pytest.raises(RuntimeError, match="negative values for beta"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(RuntimeError, match="non-positive values for delta"):
        F.huber_loss(x, x, delta=0.0)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        td.nn.HuberLoss(reduction="avg")


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("reduction", ["batchmean", "mean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_loss(reduction, log_target):
    x = torch.log_softmax(torch.tensor(rand(4, 6)), -1).numpy()
    t = torch.softmax(torch.tensor(rand(4, 6, seed=1)), -1).numpy()
    if log_target:
        t = np.log(t)
    compare_module(td.nn.KLDivLoss(reduction=reduction, log_target=log_target),
                   torch.nn.KLDivLoss(reduction=reduction, log_target=log_target),
                   [x, t], grad_inputs=[0, 1])


def test_kl_div_zero_targets_and_warning():
    x = torch.log_softmax(torch.tensor(rand(3, 4)), -1).numpy()
    t = np.array([[0.5, 0.5, 0, 0], [1, 0, 0, 0], [0.25, 0.25, 0.25, 0.25]], np.float32)
    compare_function(F.kl_div, TF.kl_div, [x, t], grad_inputs=[0], reduction="sum")
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(td.tensor(x), td.tensor(t))
