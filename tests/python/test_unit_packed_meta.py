"""Packed metas (Note [Packed metas]; tensord/_packed_meta.py) without the C++ daemon: the
pure-Python decoders (protobuf's packed-field parser, and the exact byte reader) and the C one
(_speedups_meta.h) against entries this test encodes from proto/packed_commands.h
(packed_runs.meta_entry), against the ``_Meta`` the TensorMeta path makes and against each
other, on random metas and on malformed bytes; then a session whose fake daemon sends them, good
and spoiled. The real daemon, packing on and off: test_packed.py."""

import functools
import random

import numpy as np
import pytest

import tensord as td
from tensord import _fast, _packed_meta
from tensord._dtype import Size
from tensord._meta import _Meta, _meta_from_proto
from tensord._proto import tensord_pb2 as pb

from packed_runs import meta_entry, write_varint

built = pytest.mark.c_module("_speedups")
DECODERS = [pytest.param("python", id="python"), pytest.param("exact", id="exact"),
            pytest.param("c", id="c", marks=built)]
DEVICES = ("cpu", "cuda:0", "cuda:1")
EDGES = [0, 1, 127, 128, 16383, 16384, 2**31, 2**32 + 1, 2**62, 2**63 - 1]


def decoder(name):
    return {"python": _packed_meta.store_packed_python,
            "exact": functools.partial(_packed_meta.store_packed_python, fast=False),
            "c": getattr(_fast.speedups, "store_packed", None)}[name]


def random_meta(rng, handle):
    """(handle, dtype, device, flags, dims): every DType value and a few this client does not
    know, both flags and bits beyond them, 0 to 64 dims, dims up to 2^63 - 1."""
    dims = [rng.choice(EDGES) if rng.random() < 0.3 else rng.randrange(1, 300)
            for _ in range(rng.choice([0, 0, 1, 2, 3, 4, 7, 64]))]
    return (handle, rng.choice(list(range(12)) + [1000]), rng.randrange(len(DEVICES)),
            rng.choice([0, 1, 2, 3, 7, 2**32 - 1]), dims)


def via_tensor_meta(handle, dtype, device, flags, dims):
    """The ``_Meta`` of the same handle described by a TensorMeta (the daemon's other way)."""
    return _meta_from_proto(pb.TensorMeta(
        handle=handle, dtype=dtype, shape=dims, device=DEVICES[device],
        requires_grad=bool(flags & 1), is_leaf=bool(flags & 2)))


@pytest.mark.parametrize("name", DECODERS)
def test_decoded_metas_are_the_tensor_meta_path_ones(name):
    store = decoder(name)
    rng = random.Random(5)
    for _ in range(300):
        handle = rng.choice([1, 100, 2**20, 2**40, 2**64 - 3000])
        metas = []
        for _ in range(rng.randrange(0, 40)):
            metas.append(random_meta(rng, handle))
            handle += rng.choice([1, 1, 1, 2, 50])
        handles = [m[0] for m in metas]
        released = {h for h in handles if rng.random() < 0.5}
        others = {rng.randrange(2**63) for _ in range(3)}  # released, acknowledged later
        dropped, got = released | others, {}
        result = store(b"".join(meta_entry(*m) for m in metas), DEVICES, dropped, got)
        assert result == (len(metas), min(handles, default=0), max(handles, default=0), None)
        assert dropped == others
        want = {m[0]: via_tensor_meta(*m) for m in metas if m[0] not in released}
        assert got == want
        for m in got.values():
            assert type(m) is _Meta and type(m.shape) is Size
            assert [type(d) for d in m.shape] == [int] * len(m.shape)


@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("data,why", [
    (b"", None),
    (b"\x80", "bad varint for the handle at byte 0"),
    (b"\xff" * 10 + b"\x01", "bad varint for the handle at byte 0"),  # 11 bytes
    (b"\xff" * 9 + b"\x02", "bad varint for the handle at byte 0"),  # over 64 bits
    (meta_entry(5, 2**32, 0, 0, []), "bad dtype at byte 1 (a uint32 varint)"),
    (meta_entry(5, 1, 3, 0, []), "device 3 at byte 2 is not in Welcome.devices (3 devices)"),
    (meta_entry(5, 1, 2**32, 0, []), "bad device at byte 2 (a uint32 varint)"),
    (meta_entry(5, 1, 0, 2**40, []), "bad flags at byte 3 (a uint32 varint)"),
    (meta_entry(5, 1, 0, 0, [])[:4], "bad varint for the count of dims at byte 4"),
    (meta_entry(5, 1, 0, 0, [])[:4] + b"\x05\x01\x02", "5 dims at byte 4, but only 2 bytes "
                                                       "follow"),
    (meta_entry(5, 1, 0, 0, [])[:4] + b"\x02\x01\x80", "bad varint for dim #1 at byte 6"),
    (meta_entry(5, 1, 0, 0, [2**63]), "dim #0 of the entry at byte 0 is over 2^63 - 1"),
    (meta_entry(300, 1, 0, 0, [2]) + meta_entry(301, 1, 0, 0, [2**64 - 1]),
     "dim #0 of the entry at byte 7 is over 2^63 - 1"),
])
def test_malformed_entries_stop_decoding_with_the_reason(name, data, why):
    got = {}
    count, low, high, reason = decoder(name)(data, DEVICES, set(), got)
    assert reason == why
    assert count == len(got) == (1 if data.startswith(meta_entry(300, 1, 0, 0, [2])) else 0)
    assert (low, high) == ((300, 300) if count else (0, 0))


@pytest.mark.parametrize("name", DECODERS)
def test_edge_values_decode(name):
    data = (meta_entry(2**64 - 1, 2**32 - 1, 2, 2**32 - 1, [2**63 - 1, 0])
            + b"\x81\x00" + b"\x09\x00\x00\x00")  # a one-byte value in two bytes, then 0-dim
    got = {}
    assert decoder(name)(data, DEVICES, set(), got) == (2, 1, 2**64 - 1, None)
    assert got == {2**64 - 1: _Meta(Size([2**63 - 1, 0]), None, "cuda:1", True, None, False,
                                    True, ""),
                   1: _Meta(Size(()), td.bool, "cpu", False, None, False, False, "")}


def test_decoders_agree_on_spoiled_bytes():
    stores = [decoder(name) for name in ("exact", "python", "c") if decoder(name) is not None]
    rng = random.Random(9)
    for trial in range(600):
        metas = [random_meta(rng, 1000 + 3 * k) for k in range(rng.randrange(1, 8))]
        data = bytearray(b"".join(meta_entry(*m) for m in metas))
        if trial % 2:  # a cut anywhere
            del data[rng.randrange(len(data)):]
        for _ in range(rng.randrange(1, 4)):  # bytes changed, inserted or removed
            at = rng.randrange(len(data) + 1)
            kind = rng.randrange(3)
            if kind == 0 and at < len(data):
                data[at] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF, rng.randrange(256)])
            elif kind == 1:  # ... up to a varint of ten bytes or more
                data[at:at] = bytes([rng.choice([0x80, 0xFF, 0x03])] * rng.choice([1, 1, 9]))
            elif at < len(data):
                del data[at]
        dropped = {m[0] for m in metas if rng.random() < 0.3}
        runs = []
        for store in stores:
            d, got = set(dropped), {}
            runs.append((store(bytes(data), DEVICES, d, got), d, got))
        assert all(r == runs[0] for r in runs), bytes(data).hex()


@built
def test_c_decoder_checks_its_arguments():
    store = _fast.speedups.store_packed
    with pytest.raises(TypeError):
        store(b"", ["cpu"], set(), {})  # devices: a tuple
    with pytest.raises(TypeError):
        store(meta_entry(1, 1, 0, 0, []), (b"cpu",), set(), {})
    assert store(write_varint(1), ("cpu",), set(), {})[3] == "bad dtype at byte 1 (a uint32 " \
                                                              "varint)"


# ------------------------------------------------------------ a session on the fake daemon


def test_packed_acks_when_the_daemon_sends_them(fake):
    # every Hello asks for them; a daemon that sends TensorMetas instead is understood too
    with td.connect(fake.address) as s:
        assert (td.tensor([1.0]) + td.tensor([2.0])).tolist() == [3.0]
    fake.packed_metas = bytes
    with td.connect(fake.address) as s:
        a = td.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        b = (a + a).sum(dim=[1])
        bad = a + td.tensor([1.0, 2.0])  # poisoned: a TensorMeta with its error
        assert (b.shape, b.dtype, b.device.type) == ((2,), td.float32, "cpu")
        assert b.tolist() == [6.0, 24.0] and not b.requires_grad and not b.is_leaf
        with pytest.raises(td.ShapeError):
            bad.shape
    assert [h.packed_acks for h in fake.hellos] == [True, True]


def test_a_spoiled_entry_leaves_its_handles_with_a_clear_error(fake):
    fake.packed_metas = bytes  # packed metas from the Hello on; spoiled below
    with td.connect(fake.address) as s:
        x = td.tensor(np.zeros((2, 3), np.float32))
        s.synchronize()
        fake.packed_metas = lambda b: b[:-1]  # the last entry cut short
        a = x * x  # an op's result: its meta comes from the Ack (an upload's is the client's)
        with pytest.raises(td.ProtocolError, match=(
                f"acknowledged command {a._seq} without metadata for handle {a._handle}: its "
                r"Ack's packed_created did not decode \(2 dims at byte 4, but only 1 bytes follow\)")):
            a.shape
        fake.packed_metas = bytes  # the session goes on
        b = td.tensor([[1.0, 2.0]]) * 2
        assert b.shape == (1, 2) and b.tolist() == [[2.0, 4.0]]
        with pytest.raises(td.ProtocolError, match="without metadata"):
            a.dtype
