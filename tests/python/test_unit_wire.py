"""The hand-rolled encodings of _wire parse back to the same protobuf messages (and, where the
field order is protobuf's own, are byte for byte what tensord_pb2 writes); packed runs' entries
decode, with the test's own decoder (packed_runs.py), to the fields they were made of."""

import itertools
import random

import pytest

from tensord import _site, _wire
from tensord._proto import tensord_pb2 as pb

from packed_runs import decode_run

BIG = [1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**28 - 1, 2**28, 2**40, 2**63 - 1]
RUN_VALUES = [0, 1, 127, 128, 16383, 16384, 2**21, 2**28 - 1, 2**28, 2**35 + 3, 2**63 + 5]


def batch_of(cmd: pb.Command) -> bytes:
    b = pb.Batch()
    b.commands.append(cmd)
    return b.SerializeToString()


@pytest.mark.parametrize("n", BIG + [0])
def test_varint(n):
    m = pb.Release()
    m.handles.append(n)
    assert _wire.varint(n) == m.SerializeToString()[2:]


def test_call_entry_is_what_protobuf_writes():
    for seq, inputs, first, nout, site in itertools.product(
            [1, 300, 2**21, 2**40], [[], [5], [1, 2**20], list(range(1, 200))], [7, 2**29],
            [0, 1, 3], ["", "train.py:12", "x" * 300]):
        c = pb.Command(seq=seq)
        c.call.op_id = 42
        c.call.inputs.extend(inputs)
        c.call.outputs.extend(range(first, first + nout))
        c.call.site = site
        assert _wire.call_entry(seq, 42, inputs, (), first, nout,
                                _wire.encode_site(site)) == batch_of(c)


def test_call_attrs_parse_back():
    attrs = (("alpha", "f", 2.5), ("dim", "ints", [1, -2]), ("keepdim", "b", True),
             ("rounding_mode", "s", "floor"), ("start", "i", -3))
    got = pb.Batch.FromString(_wire.call_entry(9, 3, [1], attrs, 2, 1, b"")).commands[0].call
    assert got.attrs["alpha"].f == 2.5 and list(got.attrs["dim"].ints.values) == [1, -2]
    assert got.attrs["keepdim"].b and got.attrs["rounding_mode"].s == "floor"
    assert got.attrs["start"].i == -3


@pytest.mark.parametrize("offset,last,rg,site,shape,n", [
    (0, True, False, "a.py:1", [], 4), (0, False, True, "", [2, 3], 24),
    (4096, True, False, "", [], 100), (2**21, False, False, "", [], 70000),
    (0, True, False, "", [0, 3], 0)])
def test_put_parses_back(offset, last, rg, site, shape, n):
    data = bytes(range(256)) * (n // 256) + bytes(n % 256)
    first = offset == 0
    entry = _wire.put_header_entry(5, 77, pb.FLOAT32 if first else 0, shape, "cpu" if first
                                   else "", offset, last, rg, site, len(data)) + data
    c = pb.Command(seq=5)
    p = c.put
    p.handle, p.offset, p.last, p.requires_grad, p.site = 77, offset, last, rg, site
    p.payload.data = data
    if first:
        p.dtype, p.device = pb.FLOAT32, "cpu"
        p.shape.extend(shape)
    assert pb.Batch.FromString(entry) == pb.Batch.FromString(batch_of(c))
    assert entry == batch_of(c)  # payload (field 19) is last in protobuf's order too


def test_get_entry_is_what_protobuf_writes():
    for seq, h, rid, site in itertools.product([1, 2**30], [3, 2**22], [1, 2**25], ["", "b.py:9"]):
        c = pb.Command(seq=seq)
        c.get.handle, c.get.request_id, c.get.site = h, rid, site
        assert _wire.get_entry(seq, h, rid, site) == batch_of(c)


def test_site_field_is_the_encoded_call_site():
    def inner():
        return _site.site_field(2), _site.call_site(2)
    field, site = inner()
    assert field == _wire.encode_site(site) and site.startswith("test_unit_wire.py:")
    assert _site.site_string(field) == site


@pytest.mark.parametrize("received", [0, 1, 300, 2**40])
def test_frame_is_what_protobuf_writes(received):
    cmds = [pb.Command(seq=s) for s in (1, 2, 900)]
    cmds[0].call.op_id = 3
    cmds[1].release.handles.extend([4, 5])
    cmds[2].sync.request_id = 8
    entries = [batch_of(c) for c in cmds]
    want = pb.ClientFrame(batch=pb.Batch(commands=cmds, received_seq=received))
    assert _wire.frame(entries, received) == want.SerializeToString()


def test_run_entries_decode_to_their_fields():
    # Note [Python packed runs]: against a decoder written from proto/packed_commands.h
    rng = random.Random(5)
    for _ in range(1000):
        op, site = rng.choice(RUN_VALUES[:9]), rng.choice(RUN_VALUES[:9])
        ins = [rng.choice(RUN_VALUES) for _ in range(rng.randrange(0, 5))]
        outs = [rng.choice(RUN_VALUES) for _ in range(rng.randrange(0, 3))]
        rel = [rng.choice(RUN_VALUES) for _ in range(rng.randrange(0, 6))]
        entries = (_wire.run_call(_wire.varint(op), _wire.varint(site), _wire.packed(ins),
                                  _wire.packed(outs)) + _wire.run_release(rel))
        assert decode_run(entries) == [("call", op, site, ins, outs), ("release", rel)]


def test_run_entry_is_what_protobuf_writes():
    for seq, count, n in itertools.product([1, 300, 2**40], [1, 2, 1000], [1, 200, 20000]):
        entries = bytes(i % 251 for i in range(n))
        c = pb.Command(seq=seq)
        c.packed.count, c.packed.entries = count, entries
        assert _wire.run_entry(seq, count, bytearray(entries)) == batch_of(c)
