"""Hand-rolled protobuf encoding of the hot commands (docs/protocol.md), so that an op costs no
protobuf object on the client.

A session's open batch is a list of already-encoded ``Batch.commands`` entries (each
``0x0a len Command``); a frame is ``ClientFrame{batch}`` = ``0x12 len`` + those entries. Call,
Put and Get bytes are exactly what ``tensord_pb2`` would produce for the same fields; a Put's
``payload`` (``Payload{data}``, Note [Payloads] in proto/tensord.proto) has the highest field
number, so it ends the message and the bytes can follow the header uncopied.
tests/python/test_unit_wire.py checks both. Rare commands still go through ``tensord_pb2`` and
``SerializeToString``.

Packed runs (Note [Packed commands] in proto/tensord.proto, proto/packed_commands.h): when the
daemon allows them, Calls without attributes or site text and Releases of handles are entries of
one ``Command{seq, packed{count, entries}}``, each a few varints (``run_call``, ``run_release``);
``run_entry`` wraps a run's entries once the run is complete.
"""

from __future__ import annotations

import struct
from typing import Any, Iterable, List, Sequence, Tuple

_pack_double = struct.Struct("<d").pack
# Varints by table: SMALL[n] for n < 2**14 (lengths, op ids, early handles and seqs), and
# CONT[n & 0x3FFF] + SMALL[n >> 14] for n < 2**28 (CONT: the low 14 bits as two bytes that
# both say "more follows"). Handles and seqs of a session stay below 2**28 for 268 M commands.
SMALL = [bytes([i]) if i < 128 else bytes([(i & 0x7F) | 0x80, i >> 7]) for i in range(1 << 14)]
CONT = [bytes([(i & 0x7F) | 0x80, (i >> 7) | 0x80]) for i in range(1 << 14)]


def varint(n: int) -> bytes:
    """Base-128 varint of a non-negative int (negative int64: its 64-bit two's complement)."""
    if 0 <= n < 16384:
        return SMALL[n]
    if 0 < n < 268435456:
        return CONT[n & 0x3FFF] + SMALL[n >> 14]
    if n < 0:
        n &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _ld(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field."""
    return tag + varint(len(payload)) + payload


def _attr_value(field: str, value: Any) -> bytes:
    if field == "i":
        return b"\x08" + varint(value)
    if field == "f":
        return b"\x11" + _pack_double(value)
    if field == "b":
        return b"\x18" + (b"\x01" if value else b"\x00")
    if field == "s":
        return _ld(b"\x22", value.encode())
    if field == "ints":
        return _ld(b"\x2a", _ld(b"\x0a", b"".join(varint(v) for v in value)) if value else b"")
    if field == "floats":
        return _ld(b"\x32", _ld(b"\x0a", b"".join(_pack_double(v) for v in value))
                   if value else b"")
    if field == "dtype":
        return b"\x38" + varint(value)
    raise TypeError(f"unknown AttrValue field {field!r}")


def encode_site(site: str) -> bytes:
    """The ``Call.site`` field (empty: nothing)."""
    return _ld(b"\x2a", site.encode()) if site else b""


def op_fields(op_id: int, attrs: Sequence[Tuple[str, str, Any]] = ()) -> bytes:
    """The ``Call.op_id`` and ``Call.attrs`` fields."""
    return b"\x08" + varint(op_id) + attr_fields(attrs)


def attr_fields(attrs: Sequence[Tuple[str, str, Any]]) -> bytes:
    """The ``Call.attrs`` fields of (name, AttrValue field, value) triples."""
    out = b""
    for name, field, value in attrs:
        entry = _ld(b"\x0a", name.encode()) + _ld(b"\x12", _attr_value(field, value))
        out += _ld(b"\x1a", entry)
    return out


def call_entry(seq: int, op_id: int, inputs: Sequence[int],
               attrs: Sequence[Tuple[str, str, Any]], first_output: int, num_outputs: int,
               site_field: bytes) -> bytes:
    """``Batch.commands`` entry for ``Command{seq, call{...}}``."""
    return call_entry_packed(varint(seq), op_fields(op_id, attrs), packed(inputs),
                             packed(range(first_output, first_output + num_outputs)),
                             site_field)


def packed(values: Iterable[int]) -> bytes:
    """The payload of a packed repeated varint field."""
    return b"".join([SMALL[v] if 0 <= v < 16384 else varint(v) for v in values])


def call_entry_packed(seq_varint: bytes, op_part: bytes, inputs: bytes, outputs: bytes,
                      site_field: bytes) -> bytes:
    """``call_entry`` from encoded parts: the seq's varint, ``op_fields()``, and the packed
    input and output handles (``packed()``)."""
    n_in = len(inputs)
    n_out = len(outputs)
    if 0 < n_in < 128 and 0 < n_out < 128 and len(op_part) + len(site_field) < 8000:
        # the usual case: one bytes object for the whole entry
        body_len = len(op_part) + n_in + n_out + len(site_field) + 4
        body_len_v = SMALL[body_len]
        return b"\x0a%b\x08%b\x12%b%b\x12%b%b\x22%b%b%b" % (
            SMALL[body_len + len(seq_varint) + len(body_len_v) + 2], seq_varint, body_len_v,
            op_part, SMALL[n_in], inputs, SMALL[n_out], outputs, site_field)
    body = op_part
    if n_in:
        body += b"\x12" + varint(n_in) + inputs
    if n_out:
        body += b"\x22" + varint(n_out) + outputs
    body += site_field
    cmd = b"\x08" + seq_varint + b"\x12" + varint(len(body)) + body
    return b"\x0a" + varint(len(cmd)) + cmd


# the bytes that say "more follows" in a varint: a packed field's values end at the others
CONTINUED = bytes(range(128, 256))


def value_count(values: bytes) -> int:
    """How many varints the packed field payload ``values`` holds."""
    return len(values.translate(None, CONTINUED))


def run_call(op_varint: bytes, site_varint: bytes, inputs: bytes, outputs: bytes) -> bytes:
    """A packed run's Call entry, ``1, op_id, site_id, n, n inputs, m, m outputs``, from the
    op and site ids' varints and the packed input and output handles (``packed()``)."""
    return b"\x01%b%b%b%b%b%b" % (op_varint, site_varint, varint(value_count(inputs)), inputs,
                                  varint(value_count(outputs)), outputs)


def run_release(handles: Sequence[int]) -> bytes:
    """A packed run's Release entry, ``2, n, n handles``."""
    return b"\x02" + varint(len(handles)) + packed(handles)


def run_entry(seq: int, count: int, entries: Any) -> bytes:
    """``Batch.commands`` entry for ``Command{seq, packed{count, entries}}``: the run of
    ``count`` commands, seqs ``seq .. seq + count - 1``, whose entries are ``entries``."""
    run = b"\x08" + varint(count) + b"\x12" + varint(len(entries)) + entries
    cmd = b"\x08" + varint(seq) + b"\x82\x01" + varint(len(run)) + run
    return b"\x0a" + varint(len(cmd)) + cmd


def message_entry(seq: int, cmd: Any) -> bytes:
    """``Batch.commands`` entry for a ``tensord_pb2.Command`` (its seq is set here)."""
    cmd.seq = seq
    data = cmd.SerializeToString()
    return b"\x0a" + varint(len(data)) + data


def put_header_entry(seq: int, handle: int, dtype: int, shape: Sequence[int], device: str,
                     offset: int, last: bool, requires_grad: bool, site: str,
                     data_len: int, wrapped: bool = False) -> bytes:
    """The start of the ``Batch.commands`` entry for ``Command{seq, put{...}}`` (dtype, shape,
    device, requires_grad and site as given: empty after the first chunk); the ``data_len``
    data bytes follow these bytes, appended by the caller uncopied: ``payload`` (field 19,
    ``Payload{data (field 1)}``) is the last field, as protobuf writes it."""
    head = b"\x08" + varint(handle)
    if dtype:
        head += b"\x10" + varint(dtype)
    if shape:
        head += _ld(b"\x1a", b"".join([varint(d) for d in shape]))
    if device:
        head += _ld(b"\x22", device.encode())
    if offset:
        head += b"\x28" + varint(offset)
    if last:
        head += b"\x38\x01"
    if requires_grad:
        head += b"\x40\x01"
    if site:
        head += _ld(b"\x4a", site.encode())
    if wrapped:
        head += b"\x90\x01\x01"  # wrapped_number (field 18)
    data_tag = b"\x0a" + varint(data_len)
    head += b"\x9a\x01" + varint(len(data_tag) + data_len) + data_tag  # payload{data}
    inner = b"\x08" + varint(seq) + b"\x1a" + varint(len(head) + data_len) + head
    return b"\x0a" + varint(len(inner) + data_len) + inner


def get_entry(seq: int, handle: int, request_id: int, site: str) -> bytes:
    """``Batch.commands`` entry for ``Command{seq, get{handle, request_id, site}}``."""
    body = b"\x08" + varint(handle) + b"\x10" + varint(request_id)
    if site:
        body += _ld(b"\x1a", site.encode())
    cmd = b"\x08" + varint(seq) + _ld(b"\x22", body)
    return b"\x0a" + varint(len(cmd)) + cmd


def frame(entries: List[Any], received_seq: int = 0) -> bytes:
    """A serialized ``ClientFrame{batch}`` of encoded entries (bytes or memoryviews), with
    ``Batch.received_seq`` when not 0 (the last Ack received: the daemon frees the replies up
    to it from its resume buffer)."""
    tail = [b"\x10" + varint(received_seq)] if received_seq else []
    size = len(tail[0]) if tail else 0
    for e in entries:
        size += len(e)
    return b"".join([b"\x12", varint(size)] + entries + tail)
