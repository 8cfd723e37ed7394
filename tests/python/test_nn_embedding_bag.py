"""F.embedding_bag on the daemon (its ``_embedding_bag`` row and the two backward rows) against
torch 1.13: every mode, offsets and 2-d input, include_last_offset, padding_idx,
per_sample_weights and scale_grad_by_freq; values and the gradients of the weight and of the
per-sample weights; bad offsets and indices reach the user as errors."""

import numpy as np
import pytest
import torch

import tensord as td
from nn_compare import compare_function, rand

pytestmark = pytest.mark.usefixtures("session")
F = td.nn.functional
TF = torch.nn.functional

# 7 picks from 6 rows into bags [0, 2), [2, 2) (empty), [2, 5), [5, 7); row 3 repeats.
INDICES = np.array([1, 3, 0, 3, 5, 2, 3], dtype=np.int64)
OFFSETS = np.array([0, 2, 2, 5], dtype=np.int64)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3, -3])
def test_modes_with_offsets_and_padding(mode, padding_idx):
    compare_function(
        lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx),
        lambda w, i, o: TF.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx),
        [rand(6, 4), INDICES, OFFSETS], grad_inputs=[0])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_include_last_offset_and_2d_input(mode):
    last = np.append(OFFSETS, len(INDICES))
    compare_function(
        lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, include_last_offset=True),
        lambda w, i, o: TF.embedding_bag(i, w, o, mode=mode, include_last_offset=True),
        [rand(6, 3, seed=1), INDICES, last], grad_inputs=[0])
    two_d = np.array([[0, 2, 2], [4, 1, 0]], dtype=np.int64)
    compare_function(lambda w, i: F.embedding_bag(i, w, mode=mode),
                     lambda w, i: TF.embedding_bag(i, w, mode=mode),
                     [rand(5, 3, seed=2), two_d], grad_inputs=[0])


@pytest.mark.parametrize("padding_idx", [None, 0])
def test_per_sample_weights_get_gradients(padding_idx):
    compare_function(
        lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p,
                                           padding_idx=padding_idx),
        lambda w, i, o, p: TF.embedding_bag(i, w, o, mode="sum", per_sample_weights=p,
                                            padding_idx=padding_idx),
        [rand(6, 4, seed=3), INDICES, OFFSETS, rand(7, seed=4)], grad_inputs=[0, 3])


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq(mode):
    """Each row's gradient divided by how often its index occurs: torch 1.13's CPU kernel
    divides some rows by another row's count (fixed in later releases), so the oracle is its
    unscaled gradient divided by the counts."""
    w0, cot = rand(6, 2, seed=5), rand(4, 2, seed=9)
    tw = torch.tensor(w0, requires_grad=True)
    (TF.embedding_bag(torch.tensor(INDICES), tw, torch.tensor(OFFSETS), mode=mode)
     * torch.tensor(cot)).sum().backward()
    counts = np.maximum(np.bincount(INDICES, minlength=6), 1)[:, None]
    w = td.tensor(w0, requires_grad=True)
    (F.embedding_bag(td.tensor(INDICES), w, td.tensor(OFFSETS), mode=mode,
                     scale_grad_by_freq=True) * td.tensor(cot)).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy() / counts, rtol=1e-5, atol=1e-6)


def test_float64_gradients_match_finite_differences():
    w = torch.tensor(rand(6, 3, seed=6), dtype=torch.float64, requires_grad=True)
    p = torch.tensor(rand(7, seed=7), dtype=torch.float64, requires_grad=True)
    i, o = torch.tensor(INDICES), torch.tensor(OFFSETS)
    cot = rand(4, 3, seed=8).astype(np.float64)
    wt, pt = (td.tensor(w.detach().numpy(), requires_grad=True),
              td.tensor(p.detach().numpy(), requires_grad=True))
    out = F.embedding_bag(td.tensor(INDICES), wt, td.tensor(OFFSETS), mode="sum",
                          per_sample_weights=pt)
    (out * td.tensor(cot)).sum().backward()
    # The loss is bilinear in (w, p): central differences are exact up to rounding.
    def loss(w_: torch.Tensor, p_: torch.Tensor) -> float:
        return float((TF.embedding_bag(i, w_, o, mode="sum", per_sample_weights=p_)
                      * torch.tensor(cot)).sum())
    eps = 1e-6
    for k in range(7):
        d = torch.zeros(7, dtype=torch.float64)
        d[k] = eps
        fd = (loss(w.detach(), p.detach() + d) - loss(w.detach(), p.detach() - d)) / (2 * eps)
        assert abs(pt.grad.numpy()[k] - fd) < 1e-6


def test_bad_offsets_and_indices_are_errors():
    w = td.tensor(rand(4, 2))
    with pytest.raises(td.Error, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(td.tensor([0, 1]), w, td.tensor([1]), mode="sum").numpy()
    with pytest.raises(td.Error, match="not in the valid range"):
        F.embedding_bag(td.tensor([0, 9]), w, td.tensor([0]), mode="sum").numpy()
    with pytest.raises(td.Error, match="can not be greater than input's length"):
        F.embedding_bag(td.tensor([0, 1]), w, td.tensor([0, 3]), mode="sum").numpy()
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        F.embedding_bag(td.tensor([0, 1]), w, td.tensor([0]), mode="max",
                        per_sample_weights=td.tensor(rand(2)))
