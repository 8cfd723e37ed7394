"""Autograd and training on the tensord device: PyTorch's engine on the client, its backward
ops as ordinary commands; the same losses as local PyTorch from the same weights."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"


@pytest.mark.parametrize("fn", [
    lambda x, w: (x @ w).relu().sum(),
    lambda x, w: torch.tanh(x @ w).pow(2).mean(),
    lambda x, w: F.cross_entropy(x @ w, torch.tensor([0, 2, 1, 2], device=x.device)),
    lambda x, w: F.mse_loss(torch.sigmoid(x @ w), torch.ones(4, 3, device=x.device)),
    lambda x, w: (x.t()[1:] * 2).sum() + w.exp().sum(),
    lambda x, w: F.log_softmax(x @ w, dim=1).mean(),
])
def test_gradients_match_local_pytorch(td: object, fn: object) -> None:
    g = torch.Generator().manual_seed(3)
    x, w = torch.randn(4, 5, generator=g), torch.randn(5, 3, generator=g)
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    fn(xr, wr).backward()
    xd, wd = x.to(D).requires_grad_(), w.to(D).requires_grad_()
    fn(xd, wd).backward()
    torch.testing.assert_close(xd.grad.cpu(), xr.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(wd.grad.cpu(), wr.grad, rtol=1e-5, atol=1e-6)


def test_no_grad_and_detach(td: object) -> None:
    w = torch.ones(3, device=D, requires_grad=True)
    with torch.no_grad():
        y = w * 2
    assert not y.requires_grad
    z = (w * 3).detach()
    assert not z.requires_grad and z.grad_fn is None
    (w * w).sum().backward(retain_graph=True)
    torch.testing.assert_close(w.grad.cpu(), torch.full((3,), 2.0))


def _mlp() -> "torch.nn.Module":
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 5))


def _train(model: "torch.nn.Module", make_opt: object, device: str, steps: int = 6) -> list:
    model = model.to(device)
    opt = make_opt(model.parameters())
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(16, 20, generator=g), torch.randint(0, 5, (16,), generator=g))
            for _ in range(2)]
    losses = []
    for step in range(steps):
        x, y = (t.to(device) for t in data[step % 2])
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("make_opt", [
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=True),
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3, foreach=False),
    lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True),
    lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, foreach=False),
], ids=["sgd-foreach", "sgd-loop", "adam-foreach", "adamw-loop"])
def test_mlp_trains_like_local_pytorch(td: object, make_opt: object) -> None:
    model = _mlp()
    ref = _train(copy.deepcopy(model), make_opt, "cpu")
    got = _train(model, make_opt, D)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-6)
    assert got[-1] < got[0] and got[-2] < got[1]


@pytest.mark.parametrize("fn", [
    lambda x, w: F.adaptive_avg_pool2d(x, 2).pow(2).sum(),
    lambda x, w: F.avg_pool2d(x, 2).pow(2).sum(),
    lambda x, w: F.max_pool2d(x, 2).pow(2).sum(),
    lambda x, w: F.conv2d(x, w, padding=1).tanh().sum(),
    lambda x, w: F.conv_transpose2d(x, w.transpose(0, 1), stride=2).sigmoid().sum(),
    lambda x, w: x.index_add(1, torch.tensor([0, 2, 2], device=x.device),
                             x[:, 1:].exp(), alpha=0.5).pow(2).sum(),
], ids=["adaptive_avg_pool2d", "avg_pool2d", "max_pool2d", "conv2d", "conv_transpose2d",
        "index_add"])
def test_image_op_gradients_match_local_pytorch(td: object, fn: object) -> None:
    g = torch.Generator().manual_seed(7)
    x, w = torch.randn(2, 4, 6, 6, generator=g), torch.randn(5, 4, 3, 3, generator=g)
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    fn(xr, wr).backward()
    xd, wd = x.to(D).requires_grad_(), w.to(D).requires_grad_()
    fn(xd, wd).backward()
    torch.testing.assert_close(xd.grad.cpu(), xr.grad, rtol=1e-4, atol=1e-5)
    if wr.grad is not None:
        torch.testing.assert_close(wd.grad.cpu(), wr.grad, rtol=1e-4, atol=1e-5)
