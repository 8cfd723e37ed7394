"""The multi-class margin losses' backward on the tensord device (the daemon's
multi_margin_loss_backward and multilabel_margin_loss_backward rows; the forwards are PyTorch's
decompositions on the device's ops): F.multi_margin_loss (p 1 and 2, a margin, class weights)
and F.multilabel_margin_loss (targets cut at the first -1) against CPU PyTorch in every
reduction, for a batch and a single vector; a float64 gradcheck (finite differences); no op on
the CPU fallback (conftest's autouse check)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"
REDUCTIONS = ["none", "mean", "sum"]


def _grads(fn: object, x: torch.Tensor, device: str, *args: torch.Tensor,
           **kw: object) -> tuple:
    xd = x.detach().to(device).requires_grad_()
    loss = fn(xd, *[a.to(device) for a in args], **kw)
    cot = torch.linspace(-1, 2, loss.numel(), dtype=loss.dtype).reshape(loss.shape)
    (loss * cot.to(device)).sum().backward()
    return loss.cpu(), xd.grad.cpu()


def _compare(fn: object, x: torch.Tensor, *args: torch.Tensor, **kw: object) -> None:
    for got, want in zip(_grads(fn, x, D, *args, **kw), _grads(fn, x, "cpu", *args, **kw)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,margin", [(1, 1.0), (2, 0.7)])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss_gradients(td: object, reduction: str, p: int, margin: float,
                                     weighted: bool) -> None:
    g = torch.Generator().manual_seed(p)
    x = torch.randn(5, 4, generator=g)
    y = torch.tensor([0, 3, 1, 1, 2])
    w = torch.rand(4, generator=g) + 0.5 if weighted else None
    kw = dict(p=p, margin=margin, reduction=reduction)
    if w is None:
        _compare(F.multi_margin_loss, x, y, **kw)
    else:
        _compare(lambda x_, y_, w_, **k: F.multi_margin_loss(x_, y_, weight=w_, **k),
                 x, y, w, **kw)
    _compare(F.multi_margin_loss, x[1], y[1:2], **kw)  # one vector


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_gradients(td: object, reduction: str) -> None:
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(3))
    # Targets up to the first -1: {3, 0}, {} (none), all five (no -1); later entries ignored.
    y = torch.tensor([[3, 0, -1, 1, 4], [-1, 2, 2, 2, 2], [4, 3, 2, 1, 0]])
    _compare(F.multilabel_margin_loss, x, y, reduction=reduction)
    if reduction != "none":  # PyTorch's forward decomposition makes a vector's loss [1], not []
        _compare(F.multilabel_margin_loss, x[0], y[0], reduction=reduction)


def test_float64_gradcheck(td: object) -> None:
    g = torch.Generator().manual_seed(4)
    x = torch.randn(4, 6, generator=g, dtype=torch.float64).to(D).requires_grad_()
    y = torch.tensor([5, 0, 2, 2], device=D)
    w = (torch.rand(6, generator=g, dtype=torch.float64) + 0.5).to(D)
    assert torch.autograd.gradcheck(
        lambda x_: F.multi_margin_loss(x_, y, p=2, margin=0.5, weight=w), (x,))
    labels = torch.tensor([[1, 4, -1, 0, 0, 0], [0, 1, 2, 3, 4, 5], [5, -1, 1, 1, 1, 1],
                           [2, 3, -1, 4, 4, 4]], device=D)
    assert torch.autograd.gradcheck(lambda x_: F.multilabel_margin_loss(x_, labels), (x,))
