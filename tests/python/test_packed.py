"""Packed runs against the real daemon (Note [Python packed runs], tensord/_call.py;
docs/protocol.md "Packed commands"): values, errors and profiles as PyTorch's and the
call sites'. The encodings and batches themselves: test_unit_packed.py and test_speedups.py."""

import numpy as np
import pytest
import torch

import tensord as td
from tensord._proto import tensord_pb2 as pb

from helpers import line
from packed_runs import commands_of


def frames_of(session):
    """Records the frames ``session`` sends from now on (a list that fills as they go)."""
    frames = []
    send = session._put_frame

    def put(frame):
        if frame is not None:
            frames.append(frame)
        return send(frame)

    session._put_frame = put
    return frames


def test_loop_values_match_torch(daemon):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3, 4)).astype(np.float32)
    with td.connect(daemon) as s:
        assert s._packed
        frames = frames_of(s)
        x, y = td.tensor(a), td.tensor(b)
        xr, yr = torch.tensor(a), torch.tensor(b)
        keep = []
        for i in range(2000):
            x = x * y + x  # plain binary ops: run entries
            xr = xr * yr + xr
            t = (x - y).relu()
            tr = (xr - yr).relu()
            if i % 7 == 0:  # an attribute: a Call message between runs
                x = td.add(x, t, alpha=0.5)
                xr = torch.add(xr, tr, alpha=0.5)
            if i % 50 == 0:
                keep.append((t.sum(dim=1), tr.sum(dim=1)))
            x, xr = x * 0.5, xr * 0.5  # a scalar: an upload before the Call
            del t, tr  # releases
        np.testing.assert_allclose(x.numpy(), xr.numpy(), rtol=1e-5, atol=1e-6)
        for got, want in keep:
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    kinds = {c[0] for f in frames for _, c in commands_of(f)}
    assert {"call", "release"} <= kinds
    packed_runs = [c for f in frames for c in pb.ClientFrame.FromString(f).batch.commands
                   if c.HasField("packed")]
    assert sum(r.packed.count for r in packed_runs) > 2000 * 4  # most commands are in runs


def test_the_packed_switch_is_retired(daemon):
    # the daemon always offers packed runs and metas: connect(packed=False) is gone
    with pytest.raises(TypeError, match="packed"):
        td.connect(daemon, packed=False)
    with td.connect(daemon) as s:
        assert s._packed and s.welcome.packed_commands


def test_profile_records_every_packed_op(daemon):
    with td.connect(daemon) as s:
        x, one = td.tensor([0.0]), td.tensor([1.0])
        td.synchronize()
        with td.profiler.profile() as prof:
            for _ in range(300):
                x = x + one; site = f"test_packed.py:{line()}"  # noqa: E702
                x = x * one
        assert x.item() == 300.0
        adds = [e for e in prof.events if e.name == "add"]
        assert len(adds) == 300 and all(e.site == site for e in adds)
        assert sum(e.name == "mul" for e in prof.events) == 300
        assert s._packed and len(s._site_ids) >= 2


def test_errors_of_packed_ops_name_the_bound_site(daemon):
    with td.connect(daemon):
        a, b = td.tensor([1.0, 2.0, 3.0]), td.tensor([1.0, 2.0])
        outs = []
        for k in range(3):  # the first binds the site, the others carry its id
            outs.append(a + (a if k < 2 else b)); site = f"test_packed.py:{line()}"  # noqa
        assert outs[1].tolist() == [2.0, 4.0, 6.0]
        with pytest.raises(td.ShapeError, match=f"^add at {site}"):
            outs[2].numpy()


def made(lib, devices):
    """The same tensors made with tensord or PyTorch (``lib``): leaves uploaded from NumPy (one
    requiring grad), results of ops without grad (0-dim, bool, int64, float64, 8 dims, a dim of
    2^17), results with a grad_fn, a gradient, and a result on every device in ``devices``."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    x, y = lib.tensor(a), lib.tensor(b)
    w = lib.tensor(a, requires_grad=True)
    out = {"leaf": x, "add": x + y, "0-dim": (x * y).sum(), "bool": x > y,
           "int64": lib.tensor(np.arange(24)).reshape(2, 3, 4) * 3,
           "float64": lib.tensor(a.astype(np.float64)) - 1,
           "8 dims": x.reshape(1, 2, 1, 1, 3, 1, 1, 1) + 0.5,
           "big dim": lib.zeros(3, 1 << 17) + 1,
           "grad leaf": w, "grad_fn": (w * y).relu(), "detached": w.detach()}
    with lib.no_grad():
        out["no_grad"] = w * 2
    out["loss"] = out["grad_fn"].sum()
    out["loss"].backward()
    out["grad"] = w.grad
    for dev in devices:
        out[dev] = lib.tensor(a, device=dev) * 2
    return out


def test_results_are_described_as_pytorch_describes_them(daemon, monkeypatch):
    # Note [Packed metas]: plain results come as packed entries, the rest as TensorMetas; the
    # client's metadata of every result is PyTorch's
    from tensord import _handle_table

    decoded = []
    store = _handle_table.store_packed
    monkeypatch.setattr(_handle_table, "store_packed", lambda *a: decoded.append(store(*a))
                        or decoded[-1])
    with td.connect(daemon) as s:
        got = made(td, s.devices)
        got["poisoned"] = got["add"] + td.tensor([1.0, 2.0]); site = line()  # noqa: E702
        info = {k: s.meta(t._handle, t._seq, t) for k, t in got.items()}
        err = info["poisoned"].error
        assert isinstance(err, td.ShapeError) and f"test_packed.py:{site}" in str(err)
        ref = made(torch, s.devices)
        for k, r in ref.items():
            t = got[k]
            assert (t.shape, t.dtype.name, t.requires_grad, t.is_leaf) == (
                tuple(r.shape), str(r.dtype)[len("torch."):], r.requires_grad, r.is_leaf), k
            assert (t.grad_fn and t.grad_fn.name()) == (r.grad_fn and r.grad_fn.name()), k
            assert str(t.device) == str(r.device), k
            np.testing.assert_allclose(t.numpy(), r.detach().cpu().numpy(), rtol=1e-6)
    assert all(why is None for *_, why in decoded)
    assert sum(count for count, *_ in decoded) >= 10  # leaves and plain results
