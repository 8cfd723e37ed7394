"""Decoding a download's ``Data`` frame without parsing its payload (the Python twin of
client/data_frame.h, Note [Data frames in place]).

grpcio hands each reply over as one ``bytes`` object. Parsed by ``tensord_pb2``, a Data chunk's
payload would be copied into the message, copied again by ``data.data``, and a third time into
the download's buffer; decoded here, ``DataChunk.data`` is a view of the payload inside the
received bytes, copied once, into the buffer. Other frames, and Data frames under 16 KiB
(protobuf's C++ parses those faster than Python decodes them), go to ``tensord_pb2``.
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
    chunk (else None)."""

    __slots__ = ("seq", "request_id", "meta", "offset", "data", "last", "total_bytes", "shm",
                 "shm_offset", "shm_size", "cma", "cma_size", "bulk_size", "bulk_lanes")

    def __init__(self) -> None:
        self.seq = self.request_id = self.offset = self.total_bytes = 0
        self.shm_offset = self.shm_size = self.cma_size = self.bulk_size = self.bulk_lanes = 0
        self.meta: Any = None
        self.data = memoryview(b"")
        self.last = self.shm = self.cma = False

    def WhichOneof(self, group: str) -> str:  # noqa: N802 (protobuf's name)
        """``"data"``, as ``ServerFrame.WhichOneof("kind")`` says of a Data frame."""
        return "data"


# Data's varint fields by number (request_id, offset, last, total_bytes, shm, shm_offset,
# shm_size, cma, cma_size, bulk_size, bulk_lanes); 2 (meta) and 4 (data) are length-delimited.
_VARINT_FIELDS = {1: "request_id", 3: "offset", 5: "last", 6: "total_bytes", 7: "shm",
                  8: "shm_offset", 9: "shm_size", 10: "cma", 11: "cma_size", 12: "bulk_size",
                  13: "bulk_lanes"}


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
            setattr(chunk, name, bool(value) if name in ("last", "shm") else value)
        elif field == 4 and wire_type == 2:
            n, i = _varint(b, i)
            if i + n > end:
                raise ValueError("payload past the frame")
            chunk.data = memoryview(b)[i:i + n]
            i += n
        elif field == 2 and wire_type == 2:
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
    chunk.shm = d.shm
    chunk.shm_offset = d.shm_offset
    chunk.shm_size = d.shm_size
    chunk.cma = d.cma
    chunk.cma_size = d.cma_size
    chunk.bulk_size = d.bulk_size
    chunk.bulk_lanes = d.bulk_lanes
    chunk.meta = d.meta if d.HasField("meta") else None
    chunk.data = memoryview(d.data)  # as decode's: NumPy takes bytes for a string
    return chunk
