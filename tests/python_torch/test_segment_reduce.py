"""segment_reduce and its backward on the tensord device (the daemon's rows of the same
names): every reduction against CPU PyTorch with lengths and with offsets, along a leading and
an inner axis, empty segments, an initial value, ties (a max's gradient split over them) and
zeros in a product; the data's gradient through autograd; a float64 gradcheck; no op on the CPU
fallback (conftest's autouse check)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

D = "tensord"
aten = torch.ops.aten
REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


def _run(device: str, data: torch.Tensor, reduce: str, **kw: Any) -> tuple:
    x = data.detach().to(device).requires_grad_()
    kw = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    out = torch.segment_reduce(x, reduce, **kw)
    cot = torch.linspace(-1, 2, out.numel(), dtype=out.dtype).reshape(out.shape)
    torch.where(torch.isfinite(out), out * cot.to(device), 0).sum().backward()
    return out.cpu(), x.grad.cpu()


def _compare(data: torch.Tensor, reduce: str, **kw: Any) -> None:
    for got, want in zip(_run(D, data, reduce, **kw), _run("cpu", data, reduce, **kw)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("initial", [None, 0.5])
def test_lengths_and_offsets_along_axis_0(td: object, reduce: str, initial: Any) -> None:
    # Ties (3, 3 and 5, 5) and a zero, for max's and prod's gradients; an empty segment.
    data = torch.tensor([[3.0, 1], [3, 2], [1, 0], [0, 4], [2, 4], [5, 1], [5, 1]])
    lengths = torch.tensor([3, 0, 2, 2])
    _compare(data, reduce, lengths=lengths, initial=initial)
    _compare(data, reduce, offsets=torch.tensor([0, 3, 3, 5, 7]), initial=initial)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_inner_axis(td: object, reduce: str) -> None:
    data = torch.randn(2, 6, 3, generator=torch.Generator().manual_seed(1))
    _compare(data, reduce, lengths=torch.tensor([[2, 4], [3, 3]]), axis=1)
    _compare(data, reduce, offsets=torch.tensor([[0, 1, 6], [0, 6, 6]]), axis=1)


def test_float64_gradcheck(td: object) -> None:
    x = torch.randn(6, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    x = x.to(D).requires_grad_()
    lengths = torch.tensor([2, 1, 3], device=D)
    for reduce in ["sum", "mean", "prod"]:
        assert torch.autograd.gradcheck(
            lambda a: torch.segment_reduce(a, reduce, lengths=lengths), (x,))
