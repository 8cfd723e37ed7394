"""Queuing a Call, the per-op hot path, and the packed runs it writes (part of ``Session``; see
``_session`` for the threads and the lock).

Note [Python packed runs]: when the daemon allows it (``Welcome.packed_commands``, as this
version's always does; ``connect(packed=False)`` is retired), a Call without attributes whose
call site is bound to an id, and a Release of handles, are not Command messages of their own
but entries of a packed run (Note [Packed commands] in proto/tensord.proto; ``_wire.run_call``,
``_wire.run_release``): a few varints each. The open run is a ``bytearray`` in the open batch
(``_entries[_run_index]``), standing for seqs ``_run_seq .. _run_last``; the next packable
command extends it when its seq follows ``_run_last`` (nothing else was queued since), else
starts a new run, and the run it leaves is then encoded in place (``_wire.run_entry``), as the
open run is at the flush. Seqs are allocated per command as before, so every seq the batch
bookkeeping keeps (``_sent_seq``, the ``ReplayLog``, the ``HandleTable``) is already a run's last seq
where a run ends a batch, and a resend after a resume resends whole frames: a run straddling
the daemon's applied seq goes again whole, and the daemon skips its applied entries.

Call sites (Note [Site ids], server/call_sites.cc): a packed Call carries a site id, not
the text. A session binds each encoded call site (``_site.site_field``) the first time it sends
it: that Call is a message with both the text and the new id (``_bind_site_locked``), and later
Calls from that line send the id alone. ``_site_ids`` maps the encoded site to its id's varint.

``_speedups.c`` does the same in C (its ``session_call``); tests/python/test_speedups.py checks
that both write the same bytes.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Tuple

from . import _grad, _wire
from ._fast import session_call as fast_call
from ._wire import (CONT, CONTINUED, SMALL, call_entry_packed, op_fields, packed, run_call,
                    varint)

_grad_state = _grad.state
# A session binds at most this many call sites (the daemon's limit); later ones send the text.
MAX_SITE_IDS = 1 << 16
# Bytes counted against the batch size for a run's own header.
RUN_HEADER_BYTES = 16


class CallPath:
    """``Session.call`` and the packed runs of a ``Session``."""

    # Set by Session.__init__ (declared here for readers and type checkers).
    _lock: threading.Lock
    _entries: List[Any]
    _packed: bool  # Note [Python packed runs]: whether Calls and Releases are packed
    _site_ids: Dict[bytes, bytes]  # encoded call site -> its bound id's varint
    _run: Optional[bytearray]  # the open run's entries, or None
    _run_index: int  # its position in _entries
    _run_seq: int  # the seq of its first command
    _run_last: int  # the seq of its last command

    def _call_python(self, op_id: int, inputs: bytes, num_outputs: int, site_field: bytes,
                     op_part: Optional[bytes] = None) -> Tuple[int, int, bytes]:
        """Queues a Call of op ``op_id``; returns (first output handle, seq, that handle's
        varint). The rest comes encoded: ``inputs`` the packed input handles
        (``_wire.packed``), ``site_field`` the call site (``_site.site_field``), ``op_part``
        the op id and attribute fields (``_wire.op_fields``, attributes already checked
        against the schema; default: the op id alone).

        This runs once per op: everything but the lock and the bytes is kept off this path.
        ``call`` is this method itself, or, with the C extension (``_fast``), its common case
        in C falling back to this; the C operator methods fall back here directly."""
        grad = _grad_state.enabled
        with self._lock:
            if self._broken is not None or self._closing:
                self._check_open_locked()
            if self._busy is not None:
                self._wait_not_busy_locked()
            if grad != self._grad_sent:
                self._grad_mode_locked(grad)
            if self._open is not None:
                self._commit_locked()
            if op_part is None:
                op_part = op_fields(op_id)
            site_v = None  # the bound site's id: the Call is a run's entry
            if self._packed:  # Note [Python packed runs]
                site_v = self._site_ids.get(site_field) if site_field else b"\x00"
                if site_v is None:
                    site_field = self._bind_site_locked(site_field)
                else:
                    op_v = SMALL[op_id] if op_id < 16384 else varint(op_id)
                    if len(op_part) != len(op_v) + 1:  # attributes: a message
                        if site_field:
                            site_field = b"\x30" + site_v  # Call.site_id for the text
                        site_v = None
            self._seq = seq = self._seq + 1
            first = self._next_handle
            self._next_handle = first + num_outputs
            # _wire.varint inlined (see there)
            first_v = (SMALL[first] if first < 16384 else
                       CONT[first & 0x3FFF] + SMALL[first >> 14] if first < 268435456 else
                       varint(first))
            if site_v is not None:
                if num_outputs == 1 and len(inputs) < 128:  # _wire.run_call, inlined
                    entry = b"\x01%b%b%b%b\x01%b" % (
                        op_v, site_v, SMALL[len(inputs.translate(None, CONTINUED))], inputs,
                        first_v)
                else:
                    entry = run_call(op_v, site_v, inputs,
                                     packed(range(first, first + num_outputs)))
                run = self._run
                if run is not None and self._run_last == seq - 1:
                    run += entry
                else:
                    self._start_run_locked(seq, entry)
                self._run_last = seq
            else:
                seq_v = (SMALL[seq] if seq < 16384 else
                         CONT[seq & 0x3FFF] + SMALL[seq >> 14] if seq < 268435456 else
                         varint(seq))
                if (num_outputs == 1 and 0 < len(inputs) < 128
                        and len(op_part) + len(site_field) < 8000):
                    # _wire.call_entry_packed, inlined for the usual case
                    body_len = len(op_part) + len(inputs) + len(first_v) + len(site_field) + 4
                    body_len_v = SMALL[body_len]
                    entry = b"\x0a%b\x08%b\x12%b%b\x12%b%b\x22%b%b%b" % (
                        SMALL[body_len + len(seq_v) + len(body_len_v) + 2], seq_v, body_len_v,
                        op_part, SMALL[len(inputs)], inputs, SMALL[len(first_v)], first_v,
                        site_field)
                else:
                    entry = call_entry_packed(
                        seq_v, op_part, inputs,
                        first_v if num_outputs == 1 else
                        packed(range(first, first + num_outputs)), site_field)
                self._entries.append(entry)
            self._frame_bytes += len(entry)
            if seq - self._sent_seq >= self._max_cmds or self._frame_bytes >= self._max_bytes:
                self._flush_locked()
            elif seq == self._sent_seq + 1 and self._flusher_idle:
                self._wake_flusher.notify()
        return first, seq, first_v

    if fast_call is None:
        call = _call_python
    else:
        def call(self, op_id: int, inputs: bytes, num_outputs: int, site_field: bytes,
                 op_part: Optional[bytes] = None) -> Tuple[int, int, bytes]:
            """``_call_python``, its common case in C."""
            if num_outputs == 1 and op_part is not None:
                r = fast_call(self, inputs, site_field, op_part)
                if r is not None:
                    return r
            return self._call_python(op_id, inputs, num_outputs, site_field, op_part)

    def _append_packed_locked(self, entry: bytes) -> int:
        """Queues the run entry ``entry`` (a Release) as the next command; returns its seq."""
        if self._busy is not None:
            self._wait_not_busy_locked()
        if self._open is not None:
            self._commit_locked()
        seq = self._seq + 1
        run = self._run
        if run is not None and self._run_last == seq - 1:
            run += entry
        else:
            self._start_run_locked(seq, entry)
        self._seq = self._run_last = seq
        self._frame_bytes += len(entry)
        return seq

    def _start_run_locked(self, seq: int, entry: bytes) -> None:
        """Opens a run at ``seq`` with ``entry`` at the end of the batch, closing the last."""
        if self._run is not None:
            self._close_run_locked()
        self._run = bytearray(entry)
        self._run_index = len(self._entries)
        self._entries.append(self._run)
        self._run_seq = seq
        self._frame_bytes += RUN_HEADER_BYTES

    def _close_run_locked(self) -> None:
        """Encodes the open run in its place in the batch (before a flush or a new run)."""
        run, self._run = self._run, None
        self._entries[self._run_index] = _wire.run_entry(
            self._run_seq, self._run_last - self._run_seq + 1, run)

    def _bind_site_locked(self, site_field: bytes) -> bytes:
        """The site part of a Call that binds ``site_field`` to a new id (Note [Site ids]): the
        text and ``Call.site_id``; the text alone once the session bound ``MAX_SITE_IDS``."""
        ids = self._site_ids
        if len(ids) >= MAX_SITE_IDS:
            return site_field
        site_v = ids[site_field] = varint(len(ids) + 1)
        return site_field + b"\x30" + site_v
