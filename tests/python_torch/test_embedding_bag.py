"""embedding_bag on the tensord device (the daemon's _embedding_bag row and its two backward
rows): F.embedding_bag and nn.EmbeddingBag against CPU PyTorch in every mode, with offsets or
2-d input, include_last_offset, padding_idx, per_sample_weights and scale_grad_by_freq; the
gradients of the weight and of the per-sample weights; a float64 gradcheck (finite
differences); no op on the CPU fallback (conftest's autouse check) but for int32 indices,
which the rules leave to it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"
INDICES = [1, 3, 0, 3, 5, 2, 3]
OFFSETS = [0, 2, 2, 5]  # bags [0, 2), [2, 2) (empty), [2, 5), [5, 7)


def _run(device: str, weight: torch.Tensor, psw: object, **kw: object) -> tuple:
    w = weight.detach().to(device).requires_grad_()
    p = None if psw is None else psw.detach().to(device).requires_grad_()
    idx = torch.tensor(kw.pop("indices", INDICES)).to(device)
    off = kw.pop("offsets", OFFSETS)
    off = None if off is None else torch.tensor(off).to(device)
    out = F.embedding_bag(idx, w, off, per_sample_weights=p, **kw)
    cot = torch.linspace(-1, 2, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * cot.to(device)).sum().backward()
    return out.cpu(), w.grad.cpu(), None if p is None else p.grad.cpu()


def _compare(weight: torch.Tensor, psw: object = None, **kw: object) -> None:
    got = _run(D, weight, psw, **dict(kw))
    want = _run("cpu", weight, psw, **dict(kw))
    for g, w in zip(got, want):
        if w is None:
            assert g is None
        else:
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_modes_match_pytorch(td: object, mode: str, padding_idx: object,
                             include_last_offset: bool) -> None:
    offsets = OFFSETS + [len(INDICES)] if include_last_offset else OFFSETS
    _compare(torch.randn(6, 4), mode=mode, padding_idx=padding_idx, offsets=offsets,
             include_last_offset=include_last_offset)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_2d_input_and_module(td: object, mode: str) -> None:
    _compare(torch.randn(5, 3), mode=mode, indices=[[0, 2, 2], [4, 1, 0]], offsets=None)
    torch.manual_seed(0)
    m = torch.nn.EmbeddingBag(7, 3, mode=mode)
    x = torch.tensor([[1, 6, 6, 0], [2, 2, 3, 5]])
    got, want = m.to(D)(x.to(D)), m.cpu()(x)
    torch.testing.assert_close(got.cpu(), want)


def test_per_sample_weights_and_scale_grad_by_freq(td: object) -> None:
    _compare(torch.randn(6, 4), torch.randn(7), mode="sum", padding_idx=0)
    _compare(torch.randn(6, 4), mode="mean", scale_grad_by_freq=True)


def test_float64_gradcheck(td: object) -> None:
    w = torch.randn(6, 3, dtype=torch.float64, device=D, requires_grad=True)
    p = torch.randn(7, dtype=torch.float64, device=D, requires_grad=True)
    idx, off = torch.tensor(INDICES, device=D), torch.tensor(OFFSETS, device=D)
    assert torch.autograd.gradcheck(
        lambda w_, p_: F.embedding_bag(idx, w_, off, mode="sum", per_sample_weights=p_),
        (w, p))
    assert torch.autograd.gradcheck(lambda w_: F.embedding_bag(idx, w_, off, mode="max"), (w,))


@pytest.mark.allow_fallback
def test_int32_indices_run_on_the_fallback(td: object) -> None:
    w = torch.randn(6, 2)
    idx, off = torch.tensor(INDICES, dtype=torch.int32), torch.tensor(OFFSETS, dtype=torch.int32)
    got = F.embedding_bag(idx.to(D), w.to(D), off.to(D))
    torch.testing.assert_close(got.cpu(), F.embedding_bag(idx, w, off))
