"""F.multi_margin_loss and F.multilabel_margin_loss on the daemon (their forward rows and, through
the daemon's autograd, their backward rows) against torch 1.13: every reduction, p 1 and 2, a
margin, class weights, a single vector; targets cut at the first -1; values and the input's
gradient; bad targets reach the user as errors."""

import numpy as np
import pytest

import tensord as td
import torch
from nn_compare import compare_function, rand

pytestmark = pytest.mark.usefixtures("session")
F = td.nn.functional
TF = torch.nn.functional
REDUCTIONS = ["none", "mean", "sum"]
TARGET = np.array([0, 3, 1, 1, 2], dtype=np.int64)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,margin", [(1, 1.0), (2, 0.6)])
def test_multi_margin_loss(reduction, p, margin):
    compare_function(
        lambda x, y, w: F.multi_margin_loss(x, y, p=p, margin=margin, weight=w,
                                            reduction=reduction),
        lambda x, y, w: TF.multi_margin_loss(x, y, p=p, margin=margin, weight=w,
                                             reduction=reduction),
        [rand(5, 4), TARGET, rand(4, seed=1, low=0.5, high=1.5)], grad_inputs=[0])
    compare_function(lambda x, y: F.multi_margin_loss(x, y, p=p, reduction=reduction),
                     lambda x, y: TF.multi_margin_loss(x, y, p=p, reduction=reduction),
                     [rand(4, seed=2), TARGET[1:2]], grad_inputs=[0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction):
    y = np.array([[3, 0, -1, 1, 4], [-1, 2, 2, 2, 2], [4, 3, 2, 1, 0]], dtype=np.int64)
    compare_function(lambda x, t: F.multilabel_margin_loss(x, t, reduction=reduction),
                     lambda x, t: TF.multilabel_margin_loss(x, t, reduction=reduction),
                     [rand(3, 5, seed=3), y], grad_inputs=[0])
    compare_function(lambda x, t: F.multilabel_margin_loss(x, t, reduction=reduction),
                     lambda x, t: TF.multilabel_margin_loss(x, t, reduction=reduction),
                     [rand(5, seed=4), y[0]], grad_inputs=[0])


def test_bad_targets_are_errors():
    x = td.tensor(rand(2, 3))
    with pytest.raises(td.Error, match="out of bounds"):
        F.multi_margin_loss(x, td.tensor([0, 3])).item()
    with pytest.raises(td.Error, match="out of bounds"):
        F.multilabel_margin_loss(x, td.tensor([[0, -2, 1], [0, 1, 2]])).item()
    with pytest.raises(ValueError, match="p == 1 and p == 2"):
        F.multi_margin_loss(x, td.tensor([0, 1]), p=3)
