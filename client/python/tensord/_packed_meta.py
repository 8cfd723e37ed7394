"""Ack.packed_created: the metadata of plain created handles as varint entries (Note [Packed
metas] in proto/tensord.proto; proto/packed_commands.h has the format).

A session that asks for them (``Hello.packed_acks``, under the switch of Note [Python packed
runs]) gets each created handle that is neither poisoned nor None and has no ``grad_fn`` as the
unsigned varints ``handle, dtype, device, flags, n, n dims`` instead of a ``TensorMeta``:
``dtype`` a DType enum value, ``device`` an index into ``Welcome.devices``, ``flags`` 1 for
requires_grad and 2 for is_leaf. ``store_packed`` turns them into the ``_Meta`` that
``_meta_from_proto`` makes of the same handle's ``TensorMeta``, so ``Session.meta`` hands out
either alike. ``_speedups.c`` does it in C (``_speedups_meta.h``); here, protobuf's parser of a
packed repeated field reads the varints (``IntList``), several times faster than Python reads
bytes, and ``read_exact``, the reference, reads the bytes where that parse cannot be trusted or
an entry is wrong. tests/python/test_unit_packed_meta.py checks the C decoder, this one and this
one on ``read_exact`` alone against an encoder written from the header.

A malformed entry (a truncated or over-long varint, a count larger than the bytes left, a dtype,
device or flags value over 32 bits, a device index ``Welcome.devices`` lacks, a dim of 2^63 or
more) stops the decoding there: the handles it and the entries after it describe get no
metadata, and ``Session.meta`` reports the reason for them (``Receiver._missing_meta``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from google.protobuf.message import DecodeError

from ._dtype import BY_PROTO, Size
from ._fast import speedups
from ._meta import _Meta
from ._proto import tensord_pb2 as pb
from ._wire import varint

_U32 = (1 << 32) - 1
_I64 = (1 << 63) - 1
# A varint of 10 bytes or more has nine bytes in a row that say "more follows" (1 here, in the
# bytes translated): protobuf's parser truncates one over 64 bits where the entry format calls it
# an error, so such bytes go to the exact reader.
_MORE = bytes(b >> 7 for b in range(256))
_NINE_MORE = b"\x01" * 9
#: DType enum value -> tensord dtype (None where the client knows no such dtype, as
#: ``_meta_from_proto`` gives)
DTYPES: Tuple[Any, ...] = tuple(BY_PROTO.get(v) for v in range(max(BY_PROTO) + 1))

Result = Tuple[int, int, int, Optional[str]]
Totals = Tuple[int, int, int]  # entries stored, their lowest handle, their highest


def store_packed_python(data: bytes, devices: Sequence[str], dropped: set,
                        meta: Dict[int, Any], fast: bool = True) -> Result:
    """Decodes the entries of ``data`` (an ``Ack.packed_created``) in order: the handle of each
    is taken out of ``dropped`` (released before its Ack came) if there, else its ``_Meta`` goes
    into ``meta``. ``devices`` are the names of ``Welcome.devices``. Returns (entries decoded,
    their lowest handle, their highest handle, None), or with why decoding stopped at an entry
    (the entries before it are stored); 0 for the handles when none was decoded. ``fast``
    False: ``read_exact`` alone (for tests)."""
    values: Any = None
    if fast and data.translate(_MORE).find(_NINE_MORE) < 0:
        try:
            values = pb.IntList.FromString(b"\x0a" + varint(len(data)) + data).values
        except DecodeError:  # a truncated varint: read_exact says where
            pass
    i, totals = 0, (0, 1 << 64, 0)
    if values is not None:
        i, totals = _store_values(values, i, totals, devices, dropped, meta)
        if i == len(values):
            return totals[0], totals[1] if totals[0] else 0, totals[2], None
    # An entry that is not right: the same values from the bytes, up to it, and why
    exact, why = read_exact(data, len(devices))
    _, (count, low, high) = _store_values(exact, i, totals, devices, dropped, meta)
    return count, low if count else 0, high, why


def _store_values(v: Any, i: int, totals: Totals, devices: Sequence[str], dropped: set,
                  meta: Dict[int, Any]) -> Tuple[int, Totals]:
    """Stores the entries of the varints ``v`` from index ``i`` (each value under 2^63; from
    protobuf's container each access makes an int, so each is read once), adding to
    ``totals``: (where it stopped, the totals). It stops at the end, or at an entry that is not
    right (and not stored)."""
    count, low, high = totals
    end, n_devices, n_dtypes = len(v), len(devices), len(DTYPES)
    while i + 5 <= end:
        handle, n = v[i], v[i + 4]
        j = i + 5 + n
        dtype, device, flags = v[i + 1], v[i + 2], v[i + 3]
        if j > end or dtype > _U32 or device >= n_devices or flags > _U32:
            break
        count += 1
        if handle < low:
            low = handle
        if handle > high:
            high = handle
        if handle in dropped:
            dropped.discard(handle)
        else:
            meta[handle] = _Meta(Size(v[i + 5:j]), DTYPES[dtype] if dtype < n_dtypes else None,
                                 devices[device], bool(flags & 1), None, False, bool(flags & 2),
                                 "")
        i = j
    return i, (count, low, high)


def _varint(data: bytes, pos: int) -> Tuple[int, int]:
    """(value, next position) of the unsigned varint at ``data[pos]``; value -1 when it is
    truncated or over 64 bits."""
    value = shift = 0
    end = len(data)
    while pos < end:
        b = data[pos]
        pos += 1
        if shift == 63 and b > 1:  # the tenth byte may only hold the top bit of a uint64
            return -1, pos
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    return -1, pos


def read_exact(data: bytes, n_devices: int) -> Tuple[List[int], Optional[str]]:
    """The varints of the entries of ``data`` read byte by byte, up to the first malformed
    entry, and why it is (the same text as ``_speedups_meta.h``; None when none is)."""
    values: List[int] = []
    pos, end = 0, len(data)
    while pos < end:
        start = pos
        handle, pos = _varint(data, pos)
        if handle < 0:
            return values, f"bad varint for the handle at byte {start}"
        entry = [handle]
        for name in ("dtype", "device", "flags"):
            at = pos
            v, pos = _varint(data, pos)
            if not 0 <= v <= _U32:
                return values, f"bad {name} at byte {at} (a uint32 varint)"
            if name == "device" and v >= n_devices:
                return values, (f"device {v} at byte {at} is not in Welcome.devices "
                                f"({n_devices} devices)")
            entry.append(v)
        at = pos
        n, pos = _varint(data, pos)
        if n < 0:
            return values, f"bad varint for the count of dims at byte {at}"
        if n > end - pos:  # every dim takes at least one byte
            return values, f"{n} dims at byte {at}, but only {end - pos} bytes follow"
        entry.append(n)
        for i in range(n):
            at = pos
            d, pos = _varint(data, pos)
            if d < 0:
                return values, f"bad varint for dim #{i} at byte {at}"
            if d > _I64:
                return values, f"dim #{i} of the entry at byte {start} is over 2^63 - 1"
            entry.append(d)
        values += entry
    return values, None


if speedups is not None:
    speedups.packed_meta_init(_Meta, Size, DTYPES)
#: ``store_packed_python``, in C where built
store_packed = speedups.store_packed if speedups is not None else store_packed_python
