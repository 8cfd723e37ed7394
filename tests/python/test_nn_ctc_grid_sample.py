"""F.ctc_loss and F.grid_sample of volumes on the daemon (its _ctc_loss and grid_sampler_3d
rows, their backward rows through the daemon's autograd) against torch 1.13: values and the
gradients of log_probs, of the volume and of the grid."""

import numpy as np
import pytest
import torch

import tensord as td
from nn_compare import compare_function, rand

pytestmark = pytest.mark.usefixtures("session")
F = td.nn.functional
TF = torch.nn.functional

PADDED = np.array([[1, 1, 2, 0], [0, 0, 0, 0], [4, 3, 0, 0]], dtype=np.int64)
TARGET_LENGTHS = [3, 0, 2]
INPUT_LENGTHS = [7, 4, 6]


def _log_probs(seed: int = 0) -> np.ndarray:
    return torch.tensor(rand(7, 3, 5, seed=seed)).log_softmax(2).numpy()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_with_list_lengths(reduction):
    compare_function(
        lambda lp, t: F.ctc_loss(lp, t, INPUT_LENGTHS, TARGET_LENGTHS, reduction=reduction),
        lambda lp, t: TF.ctc_loss(lp, t, INPUT_LENGTHS, TARGET_LENGTHS, reduction=reduction),
        [_log_probs(), PADDED], grad_inputs=[0])


def test_ctc_loss_with_tensor_lengths_concatenated_targets_and_zero_infinity():
    flat = np.concatenate([PADDED[b, :n] for b, n in enumerate(TARGET_LENGTHS)])
    il, tl = np.array(INPUT_LENGTHS), np.array(TARGET_LENGTHS)
    compare_function(lambda lp, t, i, n: F.ctc_loss(lp, t, i, n, blank=0),
                     lambda lp, t, i, n: TF.ctc_loss(lp, t, i, n, blank=0),
                     [_log_probs(1), flat, il, tl], grad_inputs=[0])
    # 2 2 2 2 needs 7 frames, gets 5: an infinite loss, zeroed with its gradient.
    targets = np.array([[0, 0, 0, 1], [2, 2, 2, 2], [3, 1, 0, 0]], dtype=np.int64)
    compare_function(
        lambda lp, t: F.ctc_loss(lp, t, [7, 5, 7], [4, 4, 2], blank=4, zero_infinity=True,
                                 reduction="none"),
        lambda lp, t: TF.ctc_loss(lp, t, [7, 5, 7], [4, 4, 2], blank=4, zero_infinity=True,
                                  reduction="none"),
        [_log_probs(2), targets], grad_inputs=[0])


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_of_volumes(mode, padding_mode, align_corners):
    grid = rand(2, 3, 2, 4, 3, seed=1, low=-1.3, high=1.3)
    compare_function(
        lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding_mode,
                                   align_corners=align_corners),
        lambda x, g: TF.grid_sample(x, g, mode=mode, padding_mode=padding_mode,
                                    align_corners=align_corners),
        [rand(2, 3, 4, 5, 6), grid], grad_inputs=[0, 1], rtol=1e-4, atol=1e-4)


def test_grid_sample_of_images_is_refused():
    with pytest.raises(NotImplementedError, match="5-d volumes"):
        F.grid_sample(td.tensor(rand(1, 1, 3, 3)), td.tensor(rand(1, 2, 2, 2)))
