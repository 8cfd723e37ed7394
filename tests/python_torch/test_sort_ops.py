"""sort, topk, argsort, cumsum, flip, atan2 and multinomial run on the daemon (no CPU fallback:
conftest's ``no_fallback``), with PyTorch's values and gradients."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


def test_values_and_gradients_match_local_pytorch(td: object) -> None:
    g = torch.Generator().manual_seed(5)
    x = torch.randn(4, 6, generator=g, dtype=torch.float64)
    y = torch.randn(4, 6, generator=g, dtype=torch.float64)

    def program(a: "torch.Tensor", b: "torch.Tensor") -> list:
        v, i = torch.sort(a, dim=1, descending=True, stable=True)
        tv, ti = torch.topk(a, 3, dim=0)
        out = [v, i, tv, ti, a.argsort(dim=1), a.cumsum(1), torch.cumsum(a, 0, dtype=torch.float32),
               a.flip(0, 1), torch.atan2(a, b)]
        loss = (v * b).sum() + tv.sum() * 2 + (a.cumsum(1) * b).sum() + (a.flip(1) * b).sum() \
            + torch.atan2(a, b).sum()
        return out + list(torch.autograd.grad(loss, [a, b]))

    a, b = x.clone().requires_grad_(), y.clone().requires_grad_()
    da, db = x.to(D).requires_grad_(), y.to(D).requires_grad_()
    for got, want in zip(program(da, db), program(a, b)):
        torch.testing.assert_close(got.cpu(), want)


def test_multinomial_samples_on_the_daemon(td: object) -> None:
    p = torch.tensor([[0.2, 0.0, 0.8], [1.0, 1.0, 1.0]], device=D)
    s = torch.multinomial(p, 50, replacement=True)
    assert s.device.type == "tensord" and s.shape == (2, 50) and s.dtype == torch.int64
    assert not (s[0] == 1).any().item()
    perm = torch.multinomial(p[1], 3).cpu()
    assert sorted(perm.tolist()) == [0, 1, 2]
