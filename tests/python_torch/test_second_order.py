"""Second-order gradients (create_graph) on the tensord device through the rows the fused CPU
kernels back: native_layer_norm(_backward), gelu_backward, log_softmax's backward and nll_loss,
against local PyTorch in float64 (PyTorch's engine differentiates the backward ops, which run
as ordinary commands)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"


@pytest.mark.parametrize("case", ["layer_norm", "cross_entropy", "nll_loss", "gelu_tanh"])
def test_gradient_penalty_matches_local_pytorch(td: object, case: str) -> None:
    g = torch.Generator().manual_seed(5)
    x = torch.randn(6, 5, generator=g, dtype=torch.float64)
    w = torch.randn(5, generator=g, dtype=torch.float64)
    b = torch.randn(5, generator=g, dtype=torch.float64)
    t = torch.tensor([0, 2, 1, 4, -100, 3])

    def loss(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        h = F.layer_norm(x, (5,), w, b)
        if case == "layer_norm":
            return (h * h.detach().cos()).sum()
        if case == "gelu_tanh":
            return F.gelu(h, approximate="tanh").pow(2).sum()
        if case == "nll_loss":
            return F.nll_loss(F.log_softmax(F.gelu(h), 1), t.to(x.device), reduction="sum")
        return F.cross_entropy(F.gelu(h), t.to(x.device), label_smoothing=0.1)

    results = []
    for dev in ("cpu", D):
        leaves = [v.to(dev).requires_grad_() for v in (x, w, b)]
        (gx,) = torch.autograd.grad(loss(*leaves), leaves[0], create_graph=True)
        grads = torch.autograd.grad((gx * gx).sum(), leaves, allow_unused=True)
        results.append([None if v is None else v.cpu() for v in grads])
    for got, want in zip(results[1], results[0]):
        if want is None:
            assert got is None or not got.any()
        else:
            # Python scalars travel as float32 (docs/protocol.md): the constants of PyTorch's
            # double-backward formulas (gelu's sqrt(2/pi), ...) are rounded to float32 here
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-9)
