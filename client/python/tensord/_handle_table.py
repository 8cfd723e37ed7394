"""The metadata of a session's handles, from the daemon's Acks until a Tensor takes it (the
C++ client's ``HandleTable``).

Every flushed batch allocated a range of handles (``batch_sent``); its Ack lists what those
handles became (``TensorMeta`` messages in ``created``, and under Note [Packed metas] varint
entries in ``packed_created``). ``on_ack`` matches the Ack against the ranges of the batches it
covers, so in the usual case (the batch created exactly its range) a handle costs a store, and
a temporary released before its Ack (``released``: ``dropped``) costs a set lookup and never a
``TensorMeta``. ``take`` hands a handle's metadata out once.

Not thread-safe: the session calls it under its lock (the receiver thread applies Acks, the
callers' threads take metadata and release handles).
"""

from __future__ import annotations

import collections
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple

from ._errors import ProtocolError
from ._meta import _Meta
from ._packed_meta import store_packed
from ._proto import tensord_pb2 as pb

_ITEMSIZE = {pb.FLOAT32: 4, pb.FLOAT64: 8, pb.FLOAT16: 2, pb.BFLOAT16: 2, pb.INT64: 8,
             pb.INT32: 4, pb.INT8: 1, pb.UINT8: 1, pb.BOOL: 1}


class HandleTable:
    """Handles acknowledged and not yet taken: their ``TensorMeta`` or packed ``_Meta``."""

    def __init__(self, device_names: Sequence[str] = ()) -> None:
        #: ``Welcome.devices``' names, which packed metas index
        self.device_names = tuple(device_names)
        #: handle -> TensorMeta (or the _Meta of a packed one), until ``take``
        self.meta: Dict[int, Any] = {}
        #: handles released before their Ack arrived: their metadata is not kept
        self.dropped: set = set()
        #: the highest handle an Ack described
        self.acked_handle = 0
        # (last seq, first handle, end handle) of each batch sent and not yet acknowledged
        self.batches: "collections.deque[Tuple[int, int, int]]" = collections.deque()
        self._batch_first = 1
        # (after, last, why) of the last Ack whose packed metas did not decode
        self._bad_packed: Optional[Tuple[int, int, str]] = None

    def batch_sent(self, last_seq: int, next_handle: int) -> None:
        """A batch ending at command ``last_seq`` was sent; it allocated the handles from the
        previous batch's end up to ``next_handle`` (exclusive)."""
        self.batches.append((last_seq, self._batch_first, next_handle))
        self._batch_first = next_handle

    def released(self, handles: Iterable[int]) -> None:
        """The program dropped ``handles``: their metadata, acknowledged or still to come, is
        not kept."""
        acked, meta, dropped = self.acked_handle, self.meta, self.dropped
        for h in handles:
            if h > acked:
                dropped.add(h)  # its Ack is still to come: don't keep that meta
            else:
                meta.pop(h, None)

    def take(self, handle: int) -> Any:
        """The metadata of ``handle`` (a TensorMeta or a ``_Meta``), once; None if it is not
        here (not acknowledged yet, or taken)."""
        return self.meta.pop(handle, None)

    def has(self, handle: int) -> bool:
        return handle in self.meta

    def nbytes(self, handle: int) -> Optional[int]:
        """The byte size of ``handle`` if its Ack arrived and it is not spoiled, else None."""
        m = self.meta.get(handle)
        if type(m) is _Meta:  # a packed one (_packed_meta.py): never an error
            return m.shape.numel() * (m.dtype.itemsize if m.dtype is not None else 0)
        if m is None or m.HasField("error"):
            return None
        n = _ITEMSIZE.get(m.dtype, 0)
        for d in m.shape:
            n *= d
        return n

    def on_ack(self, ack: Any, after: int) -> None:
        """Applies ``ack``, whose ``last_seq`` follows the last Ack's, ``after``."""
        last = ack.last_seq
        lo = hi = 0
        batches = self.batches
        while batches and batches[0][0] <= last:
            _, first, hi = batches.popleft()
            lo = lo or first
        created = ack.created
        packed = ack.packed_created  # Note [Packed metas]
        if packed:
            self._on_packed(created, packed, lo, hi, after, last)
            return
        n = len(created)
        if n == 0 and hi == lo:
            return  # a batch that created nothing (reads, releases, options)
        if n and n == hi - lo and created[0].handle == lo and created[n - 1].handle == hi - 1:
            # Usual case: the batch created exactly the handles [lo, hi) that it allocated.
            # Most of them are often released already (temporaries): those cost a set lookup,
            # not a TensorMeta.
            if hi - 1 > self.acked_handle:
                self.acked_handle = hi - 1
            dropped, meta = self.dropped, self.meta
            if dropped:
                for h in range(lo, hi):
                    if h not in dropped:
                        meta[h] = created[h - lo]
                dropped.difference_update(range(lo, hi))
            else:
                for i, m in enumerate(created):
                    meta[lo + i] = m
            return
        for m in created:
            h = m.handle
            if h > self.acked_handle:
                self.acked_handle = h
            if self.dropped and h in self.dropped:
                self.dropped.discard(h)
            else:
                self.meta[h] = m
        if self.dropped:
            self.dropped = {h for h in self.dropped if h > self.acked_handle}

    def _on_packed(self, created: Any, packed: bytes, lo: int, hi: int, after: int,
                   last: int) -> None:
        """``on_ack`` with packed metas (``_packed_meta.py``): ``created`` and the entries of
        ``packed`` are the handles the commands ``after + 1 .. last`` created, where the batches
        acknowledged allocated ``[lo, hi)``."""
        dropped, meta = self.dropped, self.meta
        count, low, high, why = store_packed(packed, self.device_names, dropped, meta)
        if why is not None:  # the handles left undescribed get this reason (missing)
            self._bad_packed = (after, last, why)
        handles = [m.handle for m in created]  # poisoned, None, with a grad_fn
        for h, m in zip(handles, created):
            if h in dropped:
                dropped.discard(h)
            else:
                meta[h] = m
        if handles:
            low = min(handles) if count == 0 else min(low, *handles)
            high = max(high, *handles)
            count += len(handles)
        if high > self.acked_handle:
            self.acked_handle = high
        # Every handle the batches allocated came once, so none of them is left in ``dropped``:
        # no need to look for the others there (the usual case).
        if dropped and (why is not None or count != hi - lo or low < lo or high >= hi):
            self.dropped = {h for h in dropped if h > self.acked_handle}

    def missing(self, handle: int, seq: int) -> ProtocolError:
        """What reading ``handle`` (created by command ``seq``) raises when the Ack of ``seq``
        came without its metadata."""
        bad = self._bad_packed
        why = (f": its Ack's packed_created did not decode ({bad[2]})"
               if bad is not None and bad[0] < seq <= bad[1] else "")
        return ProtocolError(f"the daemon acknowledged command {seq} without metadata for "
                             f"handle {handle}{why}", op="ack")
