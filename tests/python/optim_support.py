"""Shared by the optimizer tests (test_optim.py, test_optim_composed.py): one small model built
twice from the same weights (tensord's and torch's), the data of each step, a training loop
either library runs, and the comparison of the two models' parameters."""

import numpy as np
import torch

import tensord as td


def models(seed: int = 0, hidden: int = 8):
    torch.manual_seed(seed)
    tnet = torch.nn.Sequential(torch.nn.Linear(5, hidden), torch.nn.Tanh(),
                               torch.nn.Linear(hidden, 3))
    net = td.nn.Sequential(td.nn.Linear(5, hidden), td.nn.Tanh(), td.nn.Linear(hidden, 3))
    net.load_state_dict({k: v.detach().numpy() for k, v in tnet.state_dict().items()})
    return net, tnet


def data(step: int):
    g = np.random.default_rng(step)
    return (g.standard_normal((16, 5)).astype(np.float32),
            g.standard_normal((16, 3)).astype(np.float32))


def run(lib, net, opt, steps: int, first: int = 0):
    """``steps`` steps of MSE training on the data of steps first, first + 1, ...; the losses."""
    losses = []
    for s in range(first, first + steps):
        x, y = data(s)
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(net(lib.tensor(x)), lib.tensor(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def assert_same_params(net, tnet, rtol=1e-5, atol=1e-6):
    for (k, p), (_, tp) in zip(net.named_parameters(), tnet.named_parameters()):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=rtol, atol=atol,
                                   err_msg=k)


def run_with_b_sometimes_without_grad(cls, tcls, kw, tkw, size: int):
    """Two parameters, ``a`` with a gradient every step and ``b`` only on odd steps, stepped 5
    times by tensord's ``cls(**kw)`` and torch's ``tcls(**tkw)`` (``zero_grad(set_to_none=True)``
    on torch's side: torch 1.13's default zeroes instead); a and b's values are compared with
    torch's. Returns (opt, topt, (a, b), (ta, tb)) for the step-count checks."""
    a, b = td.nn.Parameter(td.ones(size)), td.nn.Parameter(td.ones(size))
    ta, tb = torch.nn.Parameter(torch.ones(size)), torch.nn.Parameter(torch.ones(size))
    opt, topt = cls([a, b], **kw), tcls([ta, tb], **tkw)
    for step in range(5):
        opt.zero_grad()
        topt.zero_grad(set_to_none=True)
        ((a * a).sum() + ((b * b * 3).sum() if step % 2 else 0)).backward()
        ((ta * ta).sum() + ((tb * tb * 3).sum() if step % 2 else 0)).backward()
        opt.step()
        topt.step()
    np.testing.assert_allclose(a.numpy(), ta.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(b.numpy(), tb.detach().numpy(), rtol=1e-5)
    return opt, topt, (a, b), (ta, tb)
