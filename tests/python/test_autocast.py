"""``tensord.autocast`` (the daemon's mixed precision) against PyTorch's CUDA policy written out
by hand on the CPU: result dtypes, values, float32 gradients of float32 parameters, a training
step, the setting's extent (stream order, restored on exit) and bad dtypes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tensord as td

F = torch.nn.functional


def both(shape: tuple, seed: int) -> tuple:
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return td.tensor(a), torch.from_numpy(a)


def values(t: td.Tensor) -> torch.Tensor:
    return torch.from_numpy(t.float().numpy())


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_dtypes_and_values_follow_the_policy(session: td.Session, low: str) -> None:
    tlow, dlow = getattr(torch, low), getattr(td, low)
    x, xr = both((6, 8), 0)
    w, wr = both((5, 8), 1)
    with td.autocast(dlow):
        lin = td.nn.functional.linear(x, w)          # low
        mm = x @ w.t()                               # low
        norm = td.nn.functional.layer_norm(lin, [5])  # float32
        group = td.nn.functional.group_norm(lin, 1)   # float32 (native_group_norm)
        total = lin.sum()                            # float32
        soft = lin.softmax(-1)                       # float32
        plain = lin.relu()                           # as called
        dbl = x.double() @ x.double().t()            # float64 is never cast
    after = x @ w.t()
    got = [t.dtype for t in (lin, mm, norm, total, soft, plain, dbl, after)]
    assert got == [dlow, dlow, td.float32, td.float32, td.float32, dlow, td.float64, td.float32]
    # the inputs rounded to the low dtype, multiplied in float32, the product rounded (Debian's
    # PyTorch 1.13 has no float16 matmul on the CPU)
    ref = F.linear(xr.to(tlow).float(), wr.to(tlow).float()).to(tlow)
    torch.testing.assert_close(values(lin), ref.float())
    torch.testing.assert_close(values(mm), ref.float())
    torch.testing.assert_close(values(norm), F.layer_norm(ref.float(), [5]))
    assert group.dtype == td.float32
    torch.testing.assert_close(values(group), F.group_norm(ref.float(), 1))
    torch.testing.assert_close(values(soft), ref.float().softmax(-1))
    torch.testing.assert_close(values(total), ref.float().sum(), rtol=1e-3, atol=1e-3)


def test_training_step_keeps_float32_master_weights(session: td.Session) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 12)).astype(np.float32)
    y = rng.integers(0, 4, 16)
    w1 = (rng.standard_normal((20, 12)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((4, 20)) * 0.3).astype(np.float32)
    ref = [torch.tensor(w1, requires_grad=True), torch.tensor(w2, requires_grad=True)]
    dev = [td.tensor(w1, requires_grad=True), td.tensor(w2, requires_grad=True)]
    opt_ref, opt_dev = torch.optim.SGD(ref, lr=0.5), td.optim.SGD(dev, lr=0.5)
    xd, yd = td.tensor(x), td.tensor(y)
    xr, yr = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(3):
        opt_ref.zero_grad()
        opt_dev.zero_grad()
        # CUDA's policy by hand: linear in bfloat16, log_softmax and nll_loss in float32
        h = F.linear(xr.bfloat16(), ref[0].bfloat16()).relu()
        want = F.nll_loss(F.log_softmax(F.linear(h, ref[1].bfloat16()).float(), -1), yr)
        with td.autocast(td.bfloat16):
            hd = td.nn.functional.linear(xd, dev[0]).relu()
            loss = td.nn.functional.cross_entropy(td.nn.functional.linear(hd, dev[1]), yd)
        want.backward()
        loss.backward()
        assert loss.dtype == td.float32
        assert [p.grad.dtype for p in dev] == [td.float32, td.float32]
        np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-2)
        for p, q in zip(dev, ref):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=2e-2, atol=1e-2)
        opt_ref.step()
        opt_dev.step()
    for p, q in zip(dev, ref):
        assert p.dtype == td.float32
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=2e-2, atol=1e-2)


def test_nested_blocks_restore_the_outer_setting(session: td.Session) -> None:
    x, _ = both((3, 3), 3)
    with td.autocast(td.bfloat16):
        with td.autocast(enabled=False):
            inner = x @ x
        outer = x @ x
    assert (inner.dtype, outer.dtype, (x @ x).dtype) == (td.float32, td.bfloat16, td.float32)


def test_bad_dtypes_are_refused(session: td.Session) -> None:
    with pytest.raises(ValueError, match="bfloat16 or float16"):
        td.autocast(td.float32)
    # the daemon checks too: a client of its own sending int64 gets a clear error
    session.set_options(autocast=td.int64)
    with pytest.raises(td.Error, match="autocast takes bfloat16 or float16"):
        session.synchronize()
    x, _ = both((2, 2), 4)
    assert (x @ x).dtype == td.float32  # the session goes on, autocast off
