"""The CTC loss on the tensord device (the daemon's _ctc_loss and _ctc_loss_backward rows):
F.ctc_loss against CPU PyTorch with padded and concatenated targets, lengths as lists and as
tensors, every reduction, a non-zero blank, empty targets, repeated labels, and an impossible
alignment with and without zero_infinity; the gradient of log_probs through autograd; a float64
gradcheck (finite differences); no op on the CPU fallback (conftest's autouse check)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"
T, N, C = 7, 3, 5
# Entry 0: labels 1 1 2 (a repeat needs a blank between); 1: none; 2: 4 3.
PADDED = [[1, 1, 2, 0], [0, 0, 0, 0], [4, 3, 0, 0]]
TARGET_LENGTHS = [3, 0, 2]
INPUT_LENGTHS = [7, 4, 6]


def _log_probs(dtype: object = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(T, N, C, generator=g, dtype=dtype).log_softmax(2)


def _run(device: str, lp: torch.Tensor, targets: torch.Tensor, il: object, tl: object,
         **kw: object) -> tuple:
    x = lp.detach().to(device).requires_grad_()
    if isinstance(il, torch.Tensor):
        il, tl = il.to(device), tl.to(device)
    loss = F.ctc_loss(x, targets.to(device), il, tl, **kw)
    cot = torch.linspace(-1, 2, loss.numel(), dtype=loss.dtype).reshape(loss.shape)
    (loss * cot.to(device)).sum().backward()
    return loss.cpu(), x.grad.cpu()


def _compare(lp: torch.Tensor, targets: torch.Tensor, il: object, tl: object,
             **kw: object) -> None:
    for got, want in zip(_run(D, lp, targets, il, tl, **kw),
                         _run("cpu", lp, targets, il, tl, **kw)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("tensor_lengths", [False, True])
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss_matches_pytorch(td: object, reduction: str, tensor_lengths: bool,
                                  concatenated: bool) -> None:
    targets = torch.tensor(PADDED)
    if concatenated:
        targets = torch.cat([targets[b, :n] for b, n in enumerate(TARGET_LENGTHS)])
    il, tl = INPUT_LENGTHS, TARGET_LENGTHS
    if tensor_lengths:
        il, tl = torch.tensor(il), torch.tensor(tl)
    _compare(_log_probs(), targets, il, tl, reduction=reduction)


def test_blank_and_impossible_alignments(td: object) -> None:
    targets = torch.tensor([[0, 0, 0, 1], [2, 2, 2, 2], [3, 1, 0, 0]])
    # Entry 1 needs 7 frames for 2 2 2 2 (blanks between repeats) but gets 5: infinite loss.
    il, tl = [7, 5, 7], [4, 4, 2]
    for zero_infinity in (False, True):
        _compare(_log_probs(seed=1), targets, il, tl, blank=4, reduction="none",
                 zero_infinity=zero_infinity)


def test_float64_gradcheck(td: object) -> None:
    """Through log_softmax, as PyTorch's own test: ATen's CTC gradient (and so the daemon's)
    assumes normalised log-probabilities (it is exp(log_probs) - posterior)."""
    logits = torch.randn(T, N, C, generator=torch.Generator().manual_seed(2),
                         dtype=torch.float64).to(D).requires_grad_()
    targets = torch.tensor(PADDED, device=D)
    assert torch.autograd.gradcheck(
        lambda x: F.ctc_loss(x.log_softmax(2), targets, INPUT_LENGTHS, TARGET_LENGTHS,
                             reduction="sum"), (logits,))
