"""tensord.nn's 1-d and transposed convolutions against torch 1.13: Conv1d, ConvTranspose1d,
ConvTranspose2d and their functional forms, with the torch module's weights; forward values
and the gradients w.r.t. input, weight and bias; PyTorch's initialisation bounds; bad input."""

import math

import numpy as np
import pytest
import torch

import tensord as td
from nn_compare import compare_function, compare_module, rand

pytestmark = pytest.mark.usefixtures("session")
F = td.nn.functional

CONV1D = [dict(), dict(stride=2, padding=1), dict(padding=2, dilation=2),
          dict(groups=2, bias=False), dict(groups=4, stride=3), dict(padding="same"),
          dict(padding="same", dilation=3), dict(padding="valid")]


@pytest.mark.parametrize("kw", CONV1D)
@pytest.mark.parametrize("k", [3, 4])
def test_conv1d(kw, k):
    compare_module(td.nn.Conv1d(4, 8, k, **kw), torch.nn.Conv1d(4, 8, k, **kw),
                   [rand(2, 4, 13)], grad_inputs=[0])


def test_conv1d_unbatched_input():
    compare_module(td.nn.Conv1d(3, 5, 3, padding=1), torch.nn.Conv1d(3, 5, 3, padding=1),
                   [rand(3, 10)], grad_inputs=[0])


CONVT = [dict(), dict(stride=2), dict(stride=2, padding=1, output_padding=1),
         dict(stride=3, padding=2, output_padding=2, dilation=2),
         dict(groups=2, bias=False), dict(groups=4, stride=2, output_padding=1),
         dict(dilation=3, padding=1)]


@pytest.mark.parametrize("kw", CONVT)
def test_conv_transpose1d(kw):
    compare_module(td.nn.ConvTranspose1d(4, 6 if kw.get("groups", 1) < 4 else 8, 3, **kw),
                   torch.nn.ConvTranspose1d(4, 6 if kw.get("groups", 1) < 4 else 8, 3, **kw),
                   [rand(2, 4, 9)], grad_inputs=[0])


@pytest.mark.parametrize("kw", CONVT + [dict(stride=(2, 1), padding=(1, 0),
                                             output_padding=(1, 0), kernel_size=(3, 2))])
def test_conv_transpose2d(kw):
    kw = dict(kw)
    k = kw.pop("kernel_size", 3)
    out = 6 if kw.get("groups", 1) < 4 else 8
    compare_module(td.nn.ConvTranspose2d(4, out, k, **kw),
                   torch.nn.ConvTranspose2d(4, out, k, **kw), [rand(2, 4, 6, 5)],
                   grad_inputs=[0])


def test_conv_transpose_unbatched_and_output_size():
    compare_module(td.nn.ConvTranspose2d(3, 2, 3, stride=2), torch.nn.ConvTranspose2d(3, 2, 3,
                   stride=2), [rand(3, 4, 5)], grad_inputs=[0])
    m, tm = td.nn.ConvTranspose1d(3, 2, 3, stride=3), torch.nn.ConvTranspose1d(3, 2, 3, stride=3)
    for size in ([2, 2, 15], [16], [17]):
        compare_module(m, tm, [rand(2, 3, 5)], kwargs=dict(output_size=size), grad_inputs=[0])
    with pytest.raises(ValueError, match="valid sizes range from 15 to 17"):
        m(td.tensor(rand(2, 3, 5)), output_size=[18])


def test_functional_forms():
    x, w, b = rand(2, 6, 11), rand(4, 3, 3, seed=1), rand(4, seed=2)
    compare_function(F.conv1d, torch.nn.functional.conv1d, [x, w, b], grad_inputs=[0, 1, 2],
                     stride=2, padding=1, groups=2)
    wt = rand(6, 2, 3, seed=3)
    compare_function(F.conv_transpose1d, torch.nn.functional.conv_transpose1d, [x, wt, b[:4]],
                     grad_inputs=[0, 1, 2], stride=2, output_padding=1, groups=2)
    x2, wt2 = rand(2, 6, 5, 4), rand(6, 1, 2, 3, seed=4)
    compare_function(F.conv_transpose2d, torch.nn.functional.conv_transpose2d, [x2, wt2],
                     grad_inputs=[0, 1], stride=(2, 3), padding=(0, 1), groups=3)


def test_conv2d_same_padding_with_an_even_kernel():
    compare_module(td.nn.Conv2d(3, 4, (4, 2), padding="same"),
                   torch.nn.Conv2d(3, 4, (4, 2), padding="same"), [rand(2, 3, 7, 6)],
                   grad_inputs=[0])


@pytest.mark.parametrize("cls,args,wshape", [
    (td.nn.Conv1d, (6, 4, 5), (4, 3, 5)),
    (td.nn.ConvTranspose1d, (6, 4, 5), (6, 2, 5)),
    (td.nn.ConvTranspose2d, (6, 4, (2, 3)), (6, 2, 2, 3))])
def test_init_follows_torch_bounds_and_names(cls, args, wshape):
    td.manual_seed(0)
    m = cls(*args, groups=2)
    tm = getattr(torch.nn, cls.__name__)(*args, groups=2)
    assert list(m.state_dict()) == list(tm.state_dict())
    assert tuple(m.weight.shape) == wshape == tuple(tm.weight.shape)
    bound = 1 / math.sqrt(wshape[1] * int(np.prod(wshape[2:])))
    w = m.weight.numpy()
    assert np.abs(w).max() <= bound and w.std() == pytest.approx(bound / math.sqrt(3), rel=0.3)
    assert np.abs(m.bias.numpy()).max() <= bound
    assert repr(m) == repr(tm)


def test_bad_input_is_a_clear_error():
    conv = td.nn.Conv1d(4, 8, 3)
    with pytest.raises(RuntimeError, match=r"conv1d: .*2-d \(unbatched\) or 3-d .*\[2, 4, 5, 5\]"):
        conv(td.tensor(rand(2, 4, 5, 5)))
    with pytest.raises(RuntimeError, match=r"conv1d: input of shape \[2, 3, 9\] has 3 channels"):
        conv(td.tensor(rand(2, 3, 9)))
    convt = td.nn.ConvTranspose2d(4, 8, 3)
    with pytest.raises(RuntimeError, match=r"conv_transpose1d: .*\[2, 4, 5, 5\]"):
        td.nn.ConvTranspose1d(4, 8, 3)(td.tensor(rand(2, 4, 5, 5)))  # rank
    with pytest.raises(RuntimeError, match=r"conv_transpose2d: input of shape \[1, 5, 3, 3\] "):
        convt(td.tensor(rand(1, 5, 3, 3)))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose1d(td.tensor(rand(1, 4, 5)), td.tensor(rand(4, 2, 3)), stride=2,
                           output_padding=2)
    with pytest.raises(ValueError, match="strided"):
        F.conv1d(td.tensor(rand(1, 4, 5)), td.tensor(rand(2, 4, 3)), stride=2, padding="same")
    with pytest.raises(NotImplementedError, match=r"not supported yet: Conv1d\(padding_mode="
                                                  r"'reflect'\) \(use"):
        td.nn.Conv1d(4, 8, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="divisible by groups"):
        td.nn.ConvTranspose1d(4, 6, 3, groups=4)
