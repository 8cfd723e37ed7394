"""Note [Uploads know their meta] (tensord/_calls.py): a tensor uploaded to a device the caller
named fully, or to the session's default device (the daemon's, or one ``set_options`` named),
has its shape, dtype, device and requires_grad without waiting for the Put's Ack (a training
loop reading its batch's shape pays no round trip), and the daemon agrees with that device; a
default named by an alias, which only the daemon resolves, is learnt from the daemon."""

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


def _daemon_device(t: td.Tensor) -> str:
    """Where the daemon says ``t`` is: the device of an op's result, from its Ack."""
    return str((t * 1).device)


def test_a_default_device_upload_reads_its_meta_without_waiting(device):
    s = td.default_session()
    s.synchronize()
    before = s.waits
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    t = td.tensor(x)
    assert tuple(t.shape) == (3, 2) and t.dtype is td.float32 and str(t.device) == device
    assert s.waits == before
    assert _daemon_device(t) == device
    np.testing.assert_array_equal(t.numpy(), x)


def test_uploads_follow_changes_of_the_default_device(cuda_session):
    s = cuda_session
    x = np.arange(4, dtype=np.float32)
    for dev in ("cuda:0", "cpu", "cuda:0"):
        s.set_options(default_device=dev)
        before = s.waits
        t = td.tensor(x)
        assert str(t.device) == dev and s.waits == before
        assert _daemon_device(t) == dev
        np.testing.assert_array_equal(t.numpy(), x)
    s.set_options(default_device="cpu")


def test_a_default_named_by_an_alias_is_learnt_from_the_daemon():
    s = td.default_session()
    s.synchronize()
    s.set_options(default_device="cuda")  # cuda:0 where the daemon serves one, else refused
    assert s.default_device is None
    before = s.waits
    t = td.tensor(np.ones((3, 2), dtype=np.float32))
    served = "cuda:0" in s.devices
    assert str(t.device) == ("cuda:0" if served else "cpu")
    assert s.waits == before + 1
    if not served:
        with pytest.raises(td.InvalidArgumentError, match="unknown device 'cuda'"):
            s.synchronize()
    s.set_options(default_device="cpu")
    assert s.default_device == "cpu"
