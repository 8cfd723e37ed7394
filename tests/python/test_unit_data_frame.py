"""Data frames decoded without parsing their payload (tensord._data_frame, Note [Data frames
in place]), and the upload window (Note [Upload window] in tensord._transport). No C++ daemon."""

import numpy as np
import pytest

import tensord as td
from tensord import _batch, _data_frame, _transport
from tensord._proto import tensord_pb2 as pb


def data_frame(n: int, **fields) -> pb.ServerFrame:
    f = pb.ServerFrame(seq=77)
    d = f.data
    d.request_id = 12
    d.offset = 3 << 20
    d.payload.data = bytes(range(256)) * (n // 256) + bytes(n % 256)
    d.last = True
    for k, v in fields.items():
        setattr(d, k, v)
    return f


@pytest.mark.parametrize("n", [0, 1, 200, 1 << 20])
def test_decode_matches_protobuf(n):
    f = data_frame(n, total_bytes=5 << 20)
    f.data.meta.handle = 4
    f.data.meta.shape.extend([2, 3])
    f.data.meta.device = "cpu"
    b = f.SerializeToString()
    c = _data_frame.decode(b)
    assert c is not None and c.WhichOneof("kind") == "data"
    assert (c.seq, c.request_id, c.offset, c.last, c.total_bytes) == (77, 12, 3 << 20, True,
                                                                      5 << 20)
    assert c.meta == f.data.meta
    assert c.where == "data" and bytes(c.data) == f.data.payload.data
    assert n == 0 or c.data.obj is b  # a view, not a copy


@pytest.mark.parametrize("where", ["region", "cma", "bulk"])
def test_decode_span_chunk_and_unknown_fields(where):
    f = data_frame(0)
    span = getattr(f.data.payload, where)
    span.size = 999
    if where == "region":
        span.region, span.offset = 2, 4096
    elif where == "cma":
        span.address = 0x7F0000001000
    else:
        span.lanes = 3
    b = f.SerializeToString()
    c = _data_frame.decode(b)
    lanes = 3 if where == "bulk" else 0
    assert (c.where, c.size, c.lanes, c.meta, bytes(c.data)) == (where, 999, lanes, None, b"")
    m = _data_frame.from_message(f)
    assert (m.where, m.size, m.lanes) == (where, 999, lanes)
    # Data grows an unknown field 15 (varint) and 16 (length-delimited): skipped.
    inner = f.data.SerializeToString() + b"\x78\x05" + b"\x82\x01\x02ab"
    framed = b"\x1a" + bytes([len(inner)]) + inner + b"\x50\x4d"
    c = _data_frame.decode(framed)
    assert c is not None and c.where == where and c.size == 999 and c.seq == 77


def test_other_and_malformed_frames_go_to_protobuf():
    ack = pb.ServerFrame(seq=3)
    ack.ack.last_seq = 3
    b = ack.SerializeToString()
    assert _data_frame.decode(b) is None
    assert _data_frame.deserialize(b) == ack
    cut = data_frame(1000).SerializeToString()[:-20]
    assert _data_frame.decode(cut) is None
    with pytest.raises(Exception):
        _data_frame.deserialize(cut)


def test_from_message():
    f = data_frame(300, total_bytes=300)
    f.data.meta.handle = 9
    c = _data_frame.from_message(f)
    assert bytes(c.data) == f.data.payload.data and c.meta.handle == 9 and c.total_bytes == 300


def test_big_download_with_a_small_last_chunk():
    """A download big enough for a NumPy buffer whose last chunk is parsed by protobuf."""
    from fake_daemon import FakeDaemon

    d = FakeDaemon(chunk_bytes=64 << 10)
    try:
        with td.connect(d.address):
            a = np.arange((1 << 18) + 25, dtype=np.float32)  # 16 chunks and 100 bytes
            np.testing.assert_array_equal(td.from_numpy(a).numpy(), a)
    finally:
        d.stop()


def test_upload_window_bounds_unacknowledged_chunks(monkeypatch):
    from fake_daemon import FakeDaemon

    d = FakeDaemon(chunk_bytes=64 << 10)
    monkeypatch.setattr(_transport, "UPLOAD_WINDOW", 256 << 10)
    most = [0]
    flush = _batch.Batcher._flush_locked

    def counting_flush(self):
        flush(self)
        most[0] = max(most[0], len(self._replay))

    monkeypatch.setattr(_batch.Batcher, "_flush_locked", counting_flush)
    try:
        with td.connect(d.address) as s:
            s._max_upload_frame = (128 + 4) << 10  # two chunks per frame
            a = np.arange(1 << 20, dtype=np.float32)  # 64 chunks of 64 KiB, 32 frames
            t = td.from_numpy(a)
            np.testing.assert_array_equal(t.numpy(), a)
            puts = [c.put for f in list(d.frames) for c in f.batch.commands
                    if c.WhichOneof("kind") == "put"]
            assert [p.offset for p in puts] == list(range(0, a.nbytes, 64 << 10))
    finally:
        d.stop()
    assert 0 < most[0] <= 256 // 128 + 1
