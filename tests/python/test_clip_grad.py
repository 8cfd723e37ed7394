"""tensord.nn.utils.clip_grad_norm_/clip_grad_value_ against torch.nn.utils's: the returned
total norm and the clipped gradients, for several norms, with parameters that have no gradient,
non-finite gradients, and the waits it costs."""

import math

import numpy as np
import pytest
import torch

import tensord as td
from autograd_support import grad_session  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("grad_session")

SHAPES = [(3, 4), (4,), (2, 2, 3), (1,)]


def params_with_grads(scale=1.0, skip=(), special=None):
    """tensord and torch parameters with the same gradients (``skip``: indices left without
    one; ``special``: a value written into the first gradient)."""
    ours, theirs = [], []
    for i, shape in enumerate(SHAPES):
        g = np.random.default_rng(i).standard_normal(shape).astype(np.float32) * scale
        if special is not None and i == 0:
            g.flat[1] = special
        p, tp = td.nn.Parameter(td.zeros(*shape)), torch.nn.Parameter(torch.zeros(shape))
        if i not in skip:
            (p * td.tensor(g)).sum().backward()
            (tp * torch.tensor(g)).sum().backward()
        ours.append(p)
        theirs.append(tp)
    return ours, theirs


def assert_same_grads(ours, theirs):
    for p, tp in zip(ours, theirs):
        if tp.grad is None:
            assert p.grad is None
        else:
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ours, theirs = params_with_grads(skip=(2,))
    total = td.nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert tuple(total.shape) == () and total.dtype is td.float32
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-6)
    assert_same_grads(ours, theirs)


def test_single_tensor_generator_and_no_grads():
    ours, theirs = params_with_grads(scale=5.0)
    total = td.nn.utils.clip_grad_norm_(ours[0], 1.0)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs[0], 1.0)
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-6)
    total = td.nn.utils.clip_grad_norm_((p for p in ours[1:]), 2.0, norm_type=1.0)
    ttotal = torch.nn.utils.clip_grad_norm_((p for p in theirs[1:]), 2.0, norm_type=1.0)
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-6)
    assert_same_grads(ours, theirs)
    empty, _ = params_with_grads(skip=range(len(SHAPES)))
    assert td.nn.utils.clip_grad_norm_(empty, 1.0).item() == 0.0
    assert td.nn.utils.clip_grad_norm_([], 1.0).item() == 0.0


@pytest.mark.parametrize("special", [math.inf, math.nan])
def test_non_finite_gradients(special):
    ours, theirs = params_with_grads(special=special)
    with pytest.raises(RuntimeError) as theirs_err:
        torch.nn.utils.clip_grad_norm_(theirs, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as ours_err:
        td.nn.utils.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    assert str(ours_err.value) == str(theirs_err.value)
    assert_same_grads(ours, theirs)  # untouched by the refused clip
    for norm_type in (2.0, math.inf):
        total = td.nn.utils.clip_grad_norm_(ours, 1.0, norm_type)
        ttotal = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type)
        np.testing.assert_equal(total.item(), ttotal.item())
        for p, tp in zip(ours, theirs):  # scaled by 0 (inf) or NaN, as PyTorch does
            np.testing.assert_array_equal(p.grad.numpy(), tp.grad.numpy())


def test_clips_the_grad_in_place():
    ours, theirs = params_with_grads(scale=3.0)
    before = ours[0].grad
    td.nn.utils.clip_grad_norm_(ours, 0.1)
    torch.nn.utils.clip_grad_norm_(theirs, 0.1)
    np.testing.assert_allclose(before.numpy(), theirs[0].grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("clip", [0.3, 1, 10.0])
def test_clip_grad_value_matches_torch(clip):
    ours, theirs = params_with_grads(scale=2.0, skip=(1,))
    assert td.nn.utils.clip_grad_value_(ours, clip) is None
    torch.nn.utils.clip_grad_value_(theirs, clip)
    assert_same_grads(ours, theirs)


def test_clip_norm_never_waits_and_the_norm_is_read_by_the_caller():
    # clip_grad.py: clip_grad_norm_ is one daemon row reading .grad there; clip_grad_value_
    # asks for every parameter's .grad in one batched question; the norm stays queued
    ours, _ = params_with_grads()
    more = [td.nn.Parameter(td.ones(2)) for _ in range(8)]
    for p in more:
        (p * 2).sum().backward()
    s = td.default_session()
    s.synchronize()
    before = s.waits
    total = td.nn.utils.clip_grad_norm_(ours + more, 1.0)
    assert s.waits == before
    td.nn.utils.clip_grad_value_(ours + more, 0.1)
    assert s.waits - before == 1
    assert total.item() > 1.0


def test_bad_parameters():
    with pytest.raises(TypeError, match="expected tensord Tensors as parameters, got ndarray"):
        td.nn.utils.clip_grad_norm_([np.ones(2)], 1.0)
    with pytest.raises(TypeError, match="got Tensor"):
        td.nn.utils.clip_grad_value_([torch.ones(2)], 1.0)
