"""Note [Uploads know their meta] (tensord/_calls.py): a tensor uploaded to a device the caller
named fully has its shape, dtype, device and requires_grad without waiting for the Put's Ack
(a training loop reading its batch's shape pays no round trip); one on the session's default
device still learns its device from the daemon."""

import numpy as np
import pytest

import tensord as td
from autograd_support import grad_session  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("grad_session")


def test_a_named_device_upload_reads_its_meta_without_waiting():
    s = td.default_session()
    s.synchronize()
    before = s.waits
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = td.tensor(x, device="cpu", requires_grad=True)
    assert tuple(t.shape) == (2, 3, 4) and t.size(1) == 3
    assert t.dtype is td.float32 and str(t.device) == "cpu" and t.requires_grad
    i = td.tensor(np.array([[1, 2]]), device="cpu")
    assert tuple(i.shape) == (1, 2) and i.dtype is td.int64
    assert s.waits == before
    np.testing.assert_array_equal(t.detach().numpy(), x)


def test_a_default_device_upload_asks_the_daemon():
    s = td.default_session()
    s.synchronize()
    before = s.waits
    t = td.tensor(np.ones((3, 2), dtype=np.float32))
    assert tuple(t.shape) == (3, 2)
    assert s.waits == before + 1
