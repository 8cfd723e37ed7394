"""Autograd misuse gets a clear error naming the backward's call site, raised by the next value
read or synchronize (backward() does not wait: Note [Deferred backward errors], _batch.py), and
the session goes on: backward twice without retain_graph, an in-place change to a tensor saved
for backward, backward on a tensor that does not require grad."""

import inspect

import numpy as np
import pytest

import tensord as td
from autograd_support import grad_session  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("grad_session")


def test_backward_twice_without_retain_graph() -> None:
    x = td.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()  # queued: nothing waits for it
    with pytest.raises(td.Error) as err:
        x.grad.numpy()  # the next read raises the backward's error
    assert "retain_graph" in str(err.value)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])  # the first pass stands
    assert (x.detach() + 1).tolist() == [2.0, 3.0]


def test_in_place_change_to_a_saved_tensor_names_the_op() -> None:
    x = td.tensor(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    h = x * 2          # a non-leaf
    y = h * h          # saves h
    mul_line = inspect.currentframe().f_lineno - 1
    h.add_(1)          # ... which is then modified in place
    y.sum().backward()
    backward_line = inspect.currentframe().f_lineno - 1
    with pytest.raises(td.Error) as err:
        td.synchronize()
    message = str(err.value)
    assert "modified by an inplace operation" in message
    assert "input 0 of mul" in message
    assert f"backward at test_autograd_errors.py:{backward_line}" in message
    assert f"called at test_autograd_errors.py:{mul_line}" in message
    z = td.tensor(np.array([4.0], np.float32), requires_grad=True)
    (z * 3).sum().backward()  # the session goes on
    np.testing.assert_allclose(z.grad.numpy(), [3.0])


def test_backward_without_grad_is_a_clear_error() -> None:
    td.ones(3).sum().backward()
    with pytest.raises(td.Error) as err:
        td.ones(1).item()  # any later read raises it, once
    assert "does not require grad" in str(err.value)
    td.synchronize()  # raised already
    assert (td.ones(2) * 2).tolist() == [2.0, 2.0]
