"""Decoding a download's ``Data`` frame without parsing its payload (the Python twin of
client/data_frame.h, Note [Data frames in place]).

grpcio hands each reply over as one ``bytes`` object. Parsed by ``tensord_pb2``, a Data chunk's
payload would be copied into the message, copied again by ``data.payload.data``, and a third
time into the download's buffer; decoded here, ``DataChunk.data`` is a view of the payload
inside the received bytes, copied once, into the buffer. Other frames, and Data frames under
16 KiB (protobuf's C++ parses those faster than Python decodes them), go to ``tensord_pb2``.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ._proto import tensord_pb2 as pb

_DATA_FRAME = 0x1A  # ServerFrame.data, length-delimited: the first byte of every Data frame
_SEQ = 10  # ServerFrame.seq
_MIN_DECODE_BYTES = 16 << 10


class DataChunk:
    """The fields of a ``ServerFrame{data}``: ``data`` is a memoryview of the payload (into the
    received bytes when ``decode`` made it), ``meta`` a ``tensord_pb2.TensorMeta`` on the first
    chunk (else None). ``where`` is the case of ``Data.payload`` (Note [Payloads] in
    proto/tensord.proto: "data", "region", "cma", "bulk"; "" when unset); for a span, ``size``
    is its size and ``lanes`` a bulk span's lanes."""

    __slots__ = ("seq", "request_id", "meta", "offset", "data", "last", "total_bytes", "where",
                 "size", "lanes")

    def __init__(self) -> None:
        self.seq = self.request_id = self.offset = self.total_bytes = 0
        self.size = self.lanes = 0
        self.meta: Any = None
        self.data = memoryview(b"")
        self.last = False
        self.where = ""

    def WhichOneof(self, group: str) -> str:  # noqa: N802 (protobuf's name)
        """``"data"``, as ``ServerFrame.WhichOneof("kind")`` says of a Data frame."""
        return "data"


# Data's varint fields by number (request_id, offset, last, total_bytes); 2 (meta) and 14
# (payload) are length-delimited.
_VARINT_FIELDS = {1: "request_id", 3: "offset", 5: "last", 6: "total_bytes"}
_META = 2
_PAYLOAD = 14
# Payload's fields by number: 1 the bytes, the others spans; and the field of each span that
# is its size (RegionSpan.size, CmaSpan.size, BulkSpan.size), and BulkSpan.lanes.
_WHERE = {1: "data", 2: "region", 3: "cma", 4: "bulk"}
_SPAN_SIZE = {"region": 3, "cma": 2, "bulk": 1}
_BULK_LANES = 2


def _varint(b: bytes, i: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        c = b[i]
        i += 1
        value |= (c & 0x7F) << shift
        if c < 0x80:
            return value, i
        shift += 7


def _skip(b: bytes, i: int, wire_type: int) -> int:
    if wire_type == 0:
        return _varint(b, i)[1]
    if wire_type == 1:
        return i + 8
    if wire_type == 2:
        n, i = _varint(b, i)
        return i + n
    if wire_type == 5:
        return i + 4
    raise ValueError(f"wire type {wire_type}")


def decode(b: bytes) -> Optional[DataChunk]:
    """The chunk in ``b`` when it is a serialized ``ServerFrame{data}``, else None (another kind
    of frame, or bytes that do not decode as one: parse those with ``tensord_pb2``)."""
    if not b or b[0] != _DATA_FRAME:
        return None
    try:
        return _decode(b)
    except (IndexError, ValueError):
        return None


def _decode(b: bytes) -> Optional[DataChunk]:
    chunk = DataChunk()
    end = len(b)
    i = 0
    seen_data = False
    while i < end:
        key, i = _varint(b, i)
        field, wire_type = key >> 3, key & 7
        if field == 3 and wire_type == 2 and not seen_data:
            n, i = _varint(b, i)
            data_end = i + n
            if data_end > end:
                return None
            i = _decode_data(b, i, data_end, chunk)
            seen_data = True
        elif field == _SEQ and wire_type == 0:
            chunk.seq, i = _varint(b, i)
        else:
            return None  # another kind of frame
    return chunk if seen_data and i == end else None


def _decode_data(b: bytes, i: int, end: int, chunk: DataChunk) -> int:
    while i < end:
        key, i = _varint(b, i)
        field, wire_type = key >> 3, key & 7
        name = _VARINT_FIELDS.get(field)
        if name is not None and wire_type == 0:
            value, i = _varint(b, i)
            setattr(chunk, name, bool(value) if name == "last" else value)
        elif field == _PAYLOAD and wire_type == 2:
            n, i = _varint(b, i)
            if i + n > end:
                raise ValueError("payload past the frame")
            i = _decode_payload(b, i, i + n, chunk)
        elif field == _META and wire_type == 2:
            n, i = _varint(b, i)
            if i + n > end:
                raise ValueError("meta past the frame")
            chunk.meta = pb.TensorMeta.FromString(b[i:i + n])
            i += n
        else:
            i = _skip(b, i, wire_type)
    if i != end:
        raise ValueError("a field past the Data message")
    return i


def _decode_payload(b: bytes, i: int, end: int, chunk: DataChunk) -> int:
    """A ``Payload`` message in ``b[i:end]``: its bytes as a view, or its span's size and
    lanes."""
    while i < end:
        key, i = _varint(b, i)
        field, wire_type = key >> 3, key & 7
        where = _WHERE.get(field)
        if where is None or wire_type != 2:
            i = _skip(b, i, wire_type)
            continue
        n, i = _varint(b, i)
        if i + n > end:
            raise ValueError("payload past the frame")
        if where != chunk.where:  # a oneof: the last case wins
            chunk.where, chunk.data, chunk.size, chunk.lanes = where, memoryview(b""), 0, 0
        if where == "data":
            chunk.data = memoryview(b)[i:i + n]
        else:
            _decode_span(b, i, i + n, chunk)
        i += n
    if i != end:
        raise ValueError("a field past the Payload message")
    return i


def _decode_span(b: bytes, i: int, end: int, chunk: DataChunk) -> None:
    size_field = _SPAN_SIZE[chunk.where]
    while i < end:
        key, i = _varint(b, i)
        field, wire_type = key >> 3, key & 7
        if wire_type != 0:
            i = _skip(b, i, wire_type)
            continue
        value, i = _varint(b, i)
        if field == size_field:
            chunk.size = value
        elif chunk.where == "bulk" and field == _BULK_LANES:
            chunk.lanes = value
    if i != end:
        raise ValueError("a field past the span")


def deserialize(b: bytes) -> Any:
    """grpcio's response deserializer: a ``DataChunk`` for big Data frames, else a
    ``tensord_pb2.ServerFrame``."""
    chunk = decode(b) if len(b) >= _MIN_DECODE_BYTES else None
    return chunk if chunk is not None else pb.ServerFrame.FromString(b)


def from_message(frame: Any) -> DataChunk:
    """A ``DataChunk`` of a parsed ``ServerFrame{data}`` (frames ``decode`` declined)."""
    d = frame.data
    chunk = DataChunk()
    chunk.seq = frame.seq
    chunk.request_id = d.request_id
    chunk.offset = d.offset
    chunk.last = d.last
    chunk.total_bytes = d.total_bytes
    chunk.meta = d.meta if d.HasField("meta") else None
    where = d.payload.WhichOneof("where")
    chunk.where = where or ""
    if where == "data":
        chunk.data = memoryview(d.payload.data)  # as decode's: NumPy takes bytes for a string
    elif where is not None:
        span = getattr(d.payload, where)
        chunk.size = span.size
        if where == "bulk":
            chunk.lanes = span.lanes
    return chunk
