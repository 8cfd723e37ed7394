"""What the 1-d and 3-d convolution suites on the tensord device share (test_conv1d.py,
test_conv3d.py): moving a convolution's arguments, comparing with CPU PyTorch, nn modules
checked against their CPU twins, and a small conv autoencoder's training losses."""

from __future__ import annotations

from typing import Callable, Iterable, List, Sequence

import torch
import torch.nn as nn

D = "tensord"


def to_device(args: tuple, device: str) -> tuple:
    """``args`` with every tensor moved to ``device``."""
    return tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in args)


def close(got: object, want: object, atol: float = 1e-5) -> None:
    """``got`` (on the device, or None) equals the CPU ``want`` to rtol 1e-4."""
    if want is None:
        assert got is None
    else:
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=atol)


def check_modules(modules: Iterable[nn.Module], input_shape: Sequence[int],
                  atol: float = 1e-5) -> None:
    """Each conv module, rebuilt with the same weights on the device, gives PyTorch's output
    and gradients (input, weight, bias) for one ``input_shape`` input."""
    for m in modules:
        x = torch.randn(*input_shape, requires_grad=True)
        ref = m(x)
        ref.sum().backward()
        dm = type(m)(m.in_channels, m.out_channels, m.kernel_size, stride=m.stride,
                     padding=m.padding,
                     **({"output_padding": m.output_padding} if m.transposed else {}))
        dm.load_state_dict(m.state_dict())
        dm = dm.to(D)
        dx = x.detach().to(D).requires_grad_()
        got = dm(dx)
        got.sum().backward()
        close(got, ref.detach(), atol)
        close(dx.grad, x.grad, atol)
        close(dm.weight.grad, m.weight.grad, atol)
        close(dm.bias.grad, m.bias.grad, atol)


def train_losses(make_model: Callable[[], nn.Module], input_shape: Sequence[int],
                 device: str) -> List[float]:
    """Four SGD steps of an autoencoder (MSE against its own input) from seed 0."""
    torch.manual_seed(0)
    model = make_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(4)
    x = torch.randn(*input_shape, generator=g).to(device)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = ((model(x) - x) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
