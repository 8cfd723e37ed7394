"""Client machinery against the in-process fake daemon: batching, chunking, handle order,
releases, call sites, errors, grad mode. No C++ daemon needed."""

import gc
import sys
import threading
import time

import numpy as np
import pytest

import tensord as td
from tensord import _catalog, _site
from tensord._proto import tensord_pb2 as pb


def line() -> int:
    """The caller's line number."""
    return sys._getframe(1).f_lineno


def commands(fake, kind=None):
    out = [c for f in list(fake.frames) for c in f.batch.commands]
    return [c for c in out if kind is None or c.WhichOneof("kind") == kind]


def wait_until(pred, timeout=60.0):
    """Test-side wait for something the fake daemon records (it has no condition to wait on)."""
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_dtype_values_match_the_wire_enum():
    for d in (td.float32, td.float64, td.float16, td.bfloat16, td.int64, td.int32, td.int8,
              td.uint8, td.bool):
        assert pb.DType.Value(d.name.upper()) == d.proto
    assert td.float is td.float32 and td.long is td.int64 and td.double is td.float64


def test_call_site_is_the_first_frame_outside_tensord():
    assert _site.call_site() == f"test_unit_session.py:{line()}"


def test_ops_are_batched_into_few_frames(fake, fake_session):
    x = td.ones(4, 4)
    for _ in range(200):
        x = x + 1
    assert x.numpy()[0, 0] == 201.0; n = len(fake.frames)  # noqa: E702
    assert n < 20, n  # 400+ commands; one frame per value read plus timer flushes
    seqs = [c.seq for c in commands(fake)]
    assert seqs == list(range(1, len(seqs) + 1))
    outs = [h for c in commands(fake, "call") for h in c.call.outputs]
    puts = [c.put.handle for c in commands(fake, "put")]
    handles = sorted(outs + puts)
    assert handles == sorted(set(handles)) and handles[0] == 1


def test_timer_flushes_without_a_read(fake, fake_session):
    before = len(commands(fake, "call"))
    td.zeros(2)  # nothing waits on it
    wait_until(lambda: len(commands(fake, "call")) > before)


def test_count_threshold_flushes(fake):
    with td.connect(fake.address, flush_interval=60.0, max_batch_commands=16):
        x = td.zeros(3)
        for _ in range(40):
            x = x + 1
        wait_until(lambda: len(commands(fake, "call")) >= 32)
        assert max(len(f.batch.commands) for f in fake.frames) <= 17
        assert x.numpy().tolist() == [40.0] * 3


def test_large_upload_and_download_are_chunked(fake, fake_session):
    a = np.random.default_rng(0).standard_normal((100, 101)).astype(np.float32)
    t = td.from_numpy(a)
    np.testing.assert_array_equal(t.numpy(), a)
    puts = [c.put for c in commands(fake, "put") if c.put.handle == t._handle]
    assert len(puts) == -(-a.nbytes // 4096)
    assert [p.offset for p in puts] == list(range(0, a.nbytes, 4096))
    assert [p.last for p in puts] == [False] * (len(puts) - 1) + [True]
    assert list(puts[0].shape) == [100, 101] and puts[0].dtype == pb.FLOAT32
    assert all(p.dtype == 0 and not p.shape for p in puts[1:])
    seqs = [c.seq for c in commands(fake, "put") if c.put.handle == t._handle]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # consecutive commands
    assert max(f.ByteSize() for f in fake.frames) <= fake_session._max_bytes + 4096 + 1024
    empty = td.tensor(np.zeros((0, 3), np.int64))
    assert empty.shape == (0, 3) and empty.numpy().shape == (0, 3)


def test_byte_threshold_bounds_frames(fake):
    with td.connect(fake.address, flush_interval=60.0, max_batch_bytes=10000):
        a = np.ones(50000, np.uint8)
        t = td.from_numpy(a)
        wait_until(lambda: len(commands(fake, "put")) >= 10)  # sent without a read
        assert max(f.ByteSize() for f in fake.frames) <= 10000 + 4096 + 1024
        assert t.numpy().sum() == 50000


def test_dropped_tensors_are_released_in_batches(fake, fake_session):
    keep = td.ones(2)
    td.synchronize()
    base = fake.live[fake_session.session_id]
    ts = [td.randn(3) for _ in range(50)]
    handles = {t._handle for t in ts}
    del ts
    gc.collect()
    td.synchronize()
    released = [h for c in commands(fake, "release") for h in c.release.handles]
    assert handles <= set(released)
    assert len(commands(fake, "release")) <= 3
    assert fake.live[fake_session.session_id] == base
    assert keep.tolist() == [1.0, 1.0]


def test_handles_increase_across_threads(fake, fake_session):
    results = []

    def work(k):
        x = td.full((8,), k)
        for _ in range(50):
            x = x + 1
        results.append((k, x.numpy()))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(k for k, _ in results) == list(range(6))
    for k, v in results:
        assert v.tolist() == [k + 50] * 8  # the fake asserts handle order on every command


def test_error_names_op_site_and_reason_and_spoils_only_its_values(fake, fake_session):
    a = td.ones(2, 3)
    b = td.ones(4, 5)
    good = a + 1
    bad = a @ b; bad_line = line()  # noqa: E702
    worse = bad + 1  # inherits the original error: same op, same site
    with pytest.raises(td.ShapeError) as e:
        bad.numpy()
    assert str(e.value) == (f"matmul at test_unit_session.py:{bad_line}: shapes [2, 3] and "
                            "[4, 5] cannot be multiplied")
    assert e.value.op == "matmul" and e.value.code_name == "INVALID_ARGUMENT"
    for touch in (lambda: worse.item(), lambda: worse.shape, lambda: bad.dtype):
        with pytest.raises(td.ShapeError, match=f"matmul at test_unit_session.py:{bad_line}"):
            touch()
    assert good.tolist() == [[2.0] * 3] * 2
    td.synchronize()  # the program has seen (and caught) the error: not raised again
    assert (a * 3).sum().item() == 18.0
    assert isinstance(e.value, RuntimeError)


def test_no_grad_is_sent_lazily_and_restored(fake, fake_session):
    x = td.ones(2)
    with td.no_grad():
        pass
    td.synchronize()
    assert not commands(fake, "options")
    with td.no_grad():
        assert not td.is_grad_enabled()
        y = x + 1
    z = x + 2
    td.synchronize()
    opts = [c.options.grad_enabled for c in commands(fake, "options")]
    assert opts == [False, True]
    assert td.is_grad_enabled() and (y + z).tolist() == [5.0, 5.0]

    @td.no_grad()
    def f():
        return td.is_grad_enabled()

    assert f() is False and td.is_grad_enabled()


def test_catalog_ops_without_wrappers_are_reachable(fake, fake_session):
    x = td.tensor([[1, 2, 3], [4, 5, 6]])
    assert td.select(x, 0, 1).tolist() == [4, 5, 6]  # no hand-written select
    assert x.select(1, 2).tolist() == [3, 6]
    assert x.narrow(dim=1, start=1, length=2).tolist() == [[2, 3], [5, 6]]
    assert "select" in dir(td) and "narrow" in dir(x)
    assert "select(input, dim, index)" in td.select.__doc__
    with pytest.raises(TypeError, match="unexpected keyword argument 'dims'"):
        x.sum(dims=1)
    with pytest.raises(TypeError, match="takes at most 1 tensor inputs, got 2"):
        td.select(x, x)
    with pytest.raises(NotImplementedError, match="no op 'pow'"):
        x ** 2
    with pytest.raises(AttributeError):
        td.no_such_op  # noqa: B018


def test_indexing_maps_onto_select_and_narrow(fake, fake_session):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = td.tensor(a)
    for idx in [1, -1, (0, 2), (slice(None), 1), (..., 2), (1, slice(1, 3)), (slice(-2, None),),
                (0, ..., slice(0, 10)), slice(5, 1)]:
        np.testing.assert_array_equal(x[idx].numpy(), a[idx])
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x[0, 3]
    with pytest.raises(NotImplementedError, match="slice"):
        x[::2]  # the fake has narrow but no slice
    with pytest.raises(NotImplementedError, match="unsqueeze"):
        x[None]
    assert [t.tolist() for t in td.tensor([1, 2])] == [1, 2]


def test_scalars_travel_as_0_dim_tensors(fake, fake_session):
    x = td.tensor([1.0, 2.0])
    y = 2 * x + True
    td.synchronize()
    puts = {c.put.dtype for c in commands(fake, "put") if not c.put.shape}
    assert {pb.INT64, pb.BOOL} <= puts
    assert y.tolist() == [3.0, 5.0] and y.dtype is td.float32


def test_attrs_are_encoded_by_schema():
    w = pb.Welcome()
    op = w.ops.add(id=7, name="f", min_inputs=1, max_inputs=1, num_outputs=1)
    op.attrs.add(name="dim", type="ints", required=False).default_value.ints.values.extend([])
    op.attrs.add(name="keepdim", type="bool")
    op.attrs.add(name="dtype", type="dtype")
    op.attrs.add(name="device", type="string")
    info = _catalog.build(w.ops)["f"]
    assert _catalog.encode_attrs(info, {"dim": 1, "keepdim": True, "dtype": td.int32,
                                        "device": "cuda", "unused": None}) == [
        ("dim", "ints", [1]), ("keepdim", "b", True), ("dtype", "dtype", 6), ("device", "s",
                                                                              "cuda:0")]
    assert _catalog.bind_positional(info, [2, 3], {}) == {"dim": [2, 3]}
    assert _catalog.bind_positional(info, [1, True], {}) == {"dim": 1, "keepdim": True}
    assert info.signature() == "f(input, dim=[], keepdim=None, dtype=None, device=None)"


def test_closed_session_raises(fake):
    with td.connect(fake.address):
        x = td.ones(1)
    with pytest.raises(td.ConnectionLost, match="closed"):
        x + 1
    with pytest.raises(td.ConnectionLost, match="connect"):
        td.zeros(1)  # no default session any more


def test_connect_reports_an_unreachable_daemon():
    with pytest.raises(td.ConnectionLost, match="no tensord daemon answered at 127.0.0.1:1"):
        td.connect("127.0.0.1:1", connect_timeout=0.5)
