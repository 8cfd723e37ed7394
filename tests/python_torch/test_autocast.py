"""torch.autocast(device_type="tensord") against CUDA's policy written out by hand on the CPU:
which ops run in the low dtype, which in float32, the dtypes of results and gradients, and a
training step whose float32 parameters see the same losses as the hand-cast reference."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

D = "tensord"
LOW = [torch.bfloat16, torch.float16]


@pytest.mark.parametrize("low", LOW, ids=str)
def test_op_dtypes_follow_the_policy(td: object, low: "torch.dtype") -> None:
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(6, 8, generator=g), torch.randn(5, 8, generator=g)
    img, k = torch.randn(1, 2, 6, 6, generator=g), torch.randn(3, 2, 3, 3, generator=g)
    xd, wd, imgd, kd = (t.to(D) for t in (x, w, img, k))
    with torch.autocast(device_type=D, dtype=low):
        lin = F.linear(xd, wd)           # lower precision
        conv = F.conv2d(imgd, kd)        # lower precision
        soft = lin.softmax(-1)           # float32 accumulation (dtype set)
        total = lin.sum()                # float32 accumulation (dtype set)
        norm = F.layer_norm(lin, (5,))   # float32
        ex = lin.exp()                   # float32
        mixed = torch.addcmul(xd, lin @ wd, xd)  # promote: the widest input dtype
        plain = lin.relu()               # not listed: as called
        dbl = xd.double() @ xd.double().t()  # float64 is never cast
    want = {"lin": low, "conv": low, "soft": torch.float32, "total": torch.float32,
            "norm": torch.float32, "ex": torch.float32, "mixed": torch.float32, "plain": low,
            "dbl": torch.float64}
    got = {"lin": lin, "conv": conv, "soft": soft, "total": total, "norm": norm, "ex": ex,
           "mixed": mixed, "plain": plain, "dbl": dbl}
    assert {k: v.dtype for k, v in got.items()} == want
    ref_lin = F.linear(x.to(low), w.to(low))
    torch.testing.assert_close(lin.cpu(), ref_lin)
    torch.testing.assert_close(conv.cpu(), F.conv2d(img.to(low), k.to(low)))
    torch.testing.assert_close(soft.cpu(), ref_lin.float().softmax(-1))
    torch.testing.assert_close(norm.cpu(), F.layer_norm(ref_lin.float(), (5,)))
    assert torch.is_autocast_enabled(D) is False  # the region ended


def _forward(x: "torch.Tensor", y: "torch.Tensor", w1: "torch.Tensor", w2: "torch.Tensor",
             low: "torch.dtype") -> "torch.Tensor":
    """The MLP's loss with CUDA's autocast policy applied by hand (the reference)."""
    h = F.linear(x.to(low), w1.to(low)).relu()
    logits = F.linear(h, w2.to(low))
    return F.nll_loss(F.log_softmax(logits, -1, dtype=torch.float32), y)


def test_training_step_keeps_float32_master_weights(td: object) -> None:
    low = torch.bfloat16
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(16, 12, generator=g), torch.randint(0, 4, (16,), generator=g)
    w1, w2 = torch.randn(20, 12, generator=g) * 0.3, torch.randn(4, 20, generator=g) * 0.3
    ref = [w1.clone().requires_grad_(), w2.clone().requires_grad_()]
    dev = [w1.to(D).requires_grad_(), w2.to(D).requires_grad_()]
    opt_ref, opt_dev = torch.optim.SGD(ref, lr=0.5), torch.optim.SGD(dev, lr=0.5)
    xd, yd = x.to(D), y.to(D)
    for _ in range(3):
        opt_ref.zero_grad()
        opt_dev.zero_grad()
        want = _forward(x, y, ref[0], ref[1], low)
        with torch.autocast(device_type=D, dtype=low):
            h = F.linear(xd, dev[0]).relu()
            loss = F.cross_entropy(F.linear(h, dev[1]), yd)
        assert loss.dtype == torch.float32
        want.backward()
        loss.backward()
        assert all(p.dtype == torch.float32 and p.grad.dtype == torch.float32 for p in dev)
        torch.testing.assert_close(loss.cpu(), want, rtol=1e-2, atol=1e-3)
        for p, q in zip(dev, ref):
            # atol: one bfloat16 step at these gradients' size (2**-5 in [4, 8)). The logits'
            # gradient is summed in float32 in another order than PyTorch's (the daemon's log_softmax
            # backward rows) and an element may round to the neighbouring bfloat16 value.
            torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=2e-2, atol=4e-2)
        opt_ref.step()
        opt_dev.step()
    for p, q in zip(dev, ref):  # atol: lr times the gradients' bfloat16 step above
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=2e-2, atol=2e-2)


def test_an_unsupported_dtype_disables_autocast(td: object) -> None:
    # PyTorch's own behaviour for a device's unsupported dtype: a warning, and no casts.
    x = torch.randn(3, 3).to(D)
    with pytest.warns(UserWarning, match="not supported"):
        with torch.autocast(device_type=D, dtype=torch.int32):
            assert (x @ x).dtype == torch.float32
