"""Errors on the real daemon: they stay with the values they spoil, name the op, the reason and
the test's own line, and the session goes on."""

import gc

import numpy as np
import pytest
import torch

import tensord as td
from helpers import from_torch, line, randt

pytestmark = pytest.mark.usefixtures("session")


def test_matmul_shape_error_names_op_site_and_reason():
    x, w = td.randn(64, 100), td.randn(64, 10)
    y = x @ w; site = f"test_errors.py:{line()}"  # noqa: E702
    with pytest.raises(td.ShapeError) as e:
        y.numpy()
    msg = str(e.value)
    assert msg.startswith(f"matmul at {site}: shapes [64, 100] and [64, 10] cannot be "
                          "multiplied"), msg
    assert (e.value.op, e.value.site, e.value.code_name) == ("matmul", site, "INVALID_ARGUMENT")
    assert isinstance(e.value, td.Error) and isinstance(e.value, RuntimeError)
    with pytest.raises(RuntimeError):  # torch agrees it is an error
        torch.randn(64, 100) @ torch.randn(64, 10)


def test_every_touch_of_a_spoiled_value_raises_the_original_error():
    a, b = td.ones(2, 3), td.ones(4, 3)
    bad = a + b; site = f"test_errors.py:{line()}"  # noqa: E702
    worse = (bad * 2).sum()  # reads a poisoned handle: same op, same site
    touches = [lambda: bad.shape, lambda: bad.dtype, lambda: bad.numpy(), lambda: bad.item(),
               lambda: worse.item(), lambda: worse.tolist(), lambda: repr(worse),
               lambda: worse.shape]
    for touch in touches:
        with pytest.raises(td.ShapeError, match=f"^add at {site}: .*broadcast"):
            touch()
    td.synchronize()  # the program has seen (and caught) this error already


def test_a_caught_error_is_not_raised_again_by_synchronize_or_backward():
    w = td.ones(3, requires_grad=True)
    bad = td.ones(2, 3) @ td.ones(2, 3); site = f"test_errors.py:{line()}"  # noqa: E702
    with pytest.raises(td.ShapeError, match=f"^matmul at {site}"):
        bad.item()
    (w * 2).sum().backward()  # correct: nothing to report
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
    td.synchronize()
    with pytest.raises(td.ShapeError, match=f"^matmul at {site}"):
        bad.numpy()  # the error stays with its value
    # An error the program has not seen is still reported, once.
    unseen = td.ones(4).reshape(5); site = f"test_errors.py:{line()}"  # noqa: E702
    with pytest.raises(td.ShapeError, match=f"^reshape at {site}"):
        td.synchronize()
    td.synchronize()
    del unseen


def test_unrelated_values_stay_usable_after_a_failing_op():
    a = randt((3, 4), seed=1)
    x = from_torch(a)
    good = x * 2
    bad = x.reshape(5, 5)
    after = x + 1  # queued after the failure, in the same batch
    np.testing.assert_allclose(good.numpy(), (a * 2).numpy())
    np.testing.assert_allclose(after.numpy(), (a + 1).numpy())
    with pytest.raises(td.ShapeError, match="reshape at test_errors.py:"):
        bad.numpy()
    td.synchronize()  # reported once (by numpy()); the session goes on
    np.testing.assert_allclose((good + after).numpy(), (a * 2 + a + 1).numpy(), rtol=1e-6)


def test_dropped_spoiled_values_are_still_reported_by_synchronize():
    x = td.ones(3)
    x.transpose(0, 5); site = f"test_errors.py:{line()}"  # noqa: E702
    gc.collect()
    with pytest.raises(td.ShapeError, match=f"^transpose at {site}: .*out of range"):
        td.synchronize()
    assert x.sum().item() == 3.0


def test_dtype_errors():
    x = td.tensor([1, 2, 3])
    m = x.mean(); site = f"test_errors.py:{line()}"  # noqa: E702
    with pytest.raises(td.DTypeError, match=f"^mean at {site}"):
        m.item()
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2, 3]).mean()


def test_client_side_argument_errors_raise_at_the_call():
    x = td.ones(2, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
        x.sum(**{"axis": 1})
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    if "select" in td.default_session().catalog:
        with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0"):
            x[7]
    with pytest.raises(td.InvalidArgumentError, match="unknown device"):
        td.zeros(2, device="tpu:3").numpy()


def test_error_in_an_earlier_batch_is_reported_later():
    bad = td.ones(2) @ td.ones(3)
    for _ in range(3000):  # several batches later
        td.ones(1)
    ok = td.ones(2) * 3
    assert ok.tolist() == [3.0, 3.0]
    with pytest.raises(td.ShapeError):
        bad.tolist()
