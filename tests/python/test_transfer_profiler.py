"""Same-host shared-memory transfer (bit-exact round trips, fallback to the stream) and the
per-session profiler, against the real daemon."""

import json

import numpy as np
import pytest

import tensord as td
from tensord import _shm, _staging

SIZES = [0, 1, 1000, _shm.MIN_BYTES // 4, (_shm.MIN_BYTES * 3) // 4 + 7, 9 << 20]


def _round_trip(s: td.Session, n: int, dtype=np.float32) -> None:
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(dtype)
    a[: min(n, 4)] = [np.nan, -0.0, np.inf, 1e-40][: min(n, 4)]  # bit patterns survive
    t = td.tensor(a)
    back = t.numpy()
    assert back.dtype == a.dtype and back.shape == a.shape
    assert back.tobytes() == a.tobytes()
    assert (t * 2).numpy().tobytes() == (a * 2).tobytes()


@pytest.mark.parametrize("n", SIZES)
def test_shm_round_trip_bit_exact(daemon: str, n: int) -> None:
    with td.connect(daemon, shm=True) as s:
        assert s._transport.shares_memory, "a same-host daemon should offer shared memory"
        _round_trip(s, n)
        _round_trip(s, n // 2 + 1, np.float64)


def test_shm_large_in_pieces_and_poisoned(daemon: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_staging, "MAX_BYTES", 1 << 20)  # pieces of 1 MiB: reused 3 times
    with td.connect(daemon, shm=True, cma=False, download_cache_bytes=0):
        n = (1 << 20) * 3 // 8 + 3  # int64: more than 3 pieces
        a = np.arange(n, dtype=np.int64)
        t = td.tensor(a)
        assert np.array_equal(t.numpy(), a)
        assert np.array_equal(t[1:].numpy(), a[1:])  # non-contiguous source
        bad = td.ones(2, 3) @ td.ones(2, 3)  # poisoned: shape error on download
        with pytest.raises(td.ShapeError):
            bad.numpy()
        assert np.array_equal(t.numpy(), a)  # the session goes on


def test_fallback_when_disabled(daemon: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with td.connect(daemon, shm=False) as s:
        assert not s._transport.shares_memory
        _round_trip(s, 600_000)
    monkeypatch.setenv("TENSORD_SHM", "0")
    with td.connect(daemon) as s:
        assert not s._transport.shares_memory
        _round_trip(s, 600_000)


def test_fallback_when_region_unreachable(daemon: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = _shm.Region.open

    def wrong_nonce(desc, options):  # as if the path named another host's file
        desc.nonce = b"x" * 16
        return real_open(desc, options)

    monkeypatch.setattr(_shm.Region, "open", staticmethod(wrong_nonce))
    with td.connect(daemon, shm=True) as s:
        assert not s._transport.shares_memory
        _round_trip(s, 600_000)


def test_profiler_table_and_trace(session: td.Session, tmp_path) -> None:
    x = td.randn(64, 64, requires_grad=True)
    td.synchronize()
    with td.profiler.profile() as prof:
        for _ in range(3):
            y = (x @ x).relu().sum()
        y.backward()
        x.reshape(4096).sum().item()
        y.item()
    names = [e.name for e in prof.events]
    # A view's own work (building it) is its kernel time; it allocates nothing.
    view = next(e for e in prof.events if e.name == "reshape")
    assert view.kernel_us > 0 and view.alloc_us == 0 and view.infer_us == 0
    assert names.count("matmul") == 3 and names.count("relu") == 3 and "backward" in names
    assert all(e.wall_us >= 0 and e.device for e in prof.events)
    mm = [e for e in prof.events if e.name == "matmul"]
    assert all(e.bytes_allocated == 64 * 64 * 4 and e.site.startswith("test_") for e in mm)
    avg = {a.name: a for a in prof.key_averages()}
    assert avg["matmul"].count == 3
    table = prof.key_averages().table(sort_by="total_time", row_limit=5)
    assert "matmul" in table and "Calls" in table
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    ops = [t for t in trace if t["cat"] == "op"]
    assert len(ops) == len(prof.events) and ops[0]["ph"] == "X"
    # Phases: each op's nest inside it, in order, and never exceed its wall time.
    for e in mm:
        assert e.kernel_us > 0 and e.infer_us > 0 and e.alloc_us > 0 and e.wait_us > 0
        assert e.decode_us + e.infer_us + e.alloc_us + e.kernel_us <= e.wall_us + 1e-3
    first = next(t for t in ops if t["name"] == "matmul")
    inside = [t for t in trace if t["cat"] == "phase" and t["tid"] == first["tid"]
              and first["ts"] <= t["ts"] < first["ts"] + first["dur"]]
    assert [t["name"] for t in inside] == ["decode", "infer", "alloc", "kernel"]
    assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-6 for a, b in zip(inside, inside[1:]))
    assert "Avg kernel" in table and avg["matmul"].phases_us["kernel"] > 0
    # The backward lists the graph nodes it ran, inside its own span.
    bw = next(e for e in prof.events if e.name == "backward")
    node_names = [n[0] for n in bw.nodes]
    assert "SumBackward0" in node_names and "ReluBackward0" in node_names
    assert node_names == ["SumBackward0", "ReluBackward0", "MatmulBackward0", "AccumulateGrad"]
    assert all(bw.start_us <= s and s + w <= bw.start_us + bw.wall_us + 1e-3
               for _, s, w in bw.nodes)
    nodes = {a.name: a for a in prof.backward_nodes()}
    assert nodes["SumBackward0"].count == 1 and "Name" in prof.backward_nodes().table()
    assert sum(1 for t in trace if t["cat"] == "node") == len(bw.nodes)
    # outside the block nothing is recorded
    (x.sum() + 1).item()
    assert len(session.profile_fetch().ops) == 0
