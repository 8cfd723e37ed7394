"""Test-side reading of what the client sends: a decoder of packed runs written from
proto/packed_commands.h alone (independent of tensord._wire and _speedups.c), the commands a
frame stands for, and a ``Session`` without a connection whose frames a test collects. Also the
daemon's side of packed metas: an encoder of Ack.packed_created entries from the same header."""

from __future__ import annotations

import collections
import random
import threading
from typing import Any, Callable, List, Tuple

from tensord import _wire
from tensord._handle_table import HandleTable
from tensord._proto import tensord_pb2 as pb
from tensord._replay_log import ReplayLog
from tensord._transport import Transport
from tensord._session import Session


def read_varint(data: bytes, pos: int) -> Tuple[int, int]:
    """(value, next position) of the unsigned LEB128 varint at ``data[pos]``."""
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def write_varint(value: int) -> bytes:
    """``value`` (0 .. 2^64 - 1) as an unsigned LEB128 varint."""
    out = bytearray()
    while value >= 0x80:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def meta_entry(handle: int, dtype: int, device: int, flags: int, dims: List[int]) -> bytes:
    """One Ack.packed_created entry: ``handle, dtype, device, flags, n, n dims``."""
    return b"".join(write_varint(v) for v in [handle, dtype, device, flags, len(dims), *dims])


def decode_run(entries: bytes) -> List[tuple]:
    """A run's entries: ("call", op_id, site_id, inputs, outputs) or ("release", handles)."""
    out: List[tuple] = []
    pos = 0

    def handles() -> List[int]:
        nonlocal pos
        n, pos = read_varint(entries, pos)
        values = []
        for _ in range(n):
            v, pos = read_varint(entries, pos)
            values.append(v)
        return values

    while pos < len(entries):
        kind, pos = read_varint(entries, pos)
        if kind == 1:
            op, pos = read_varint(entries, pos)
            site, pos = read_varint(entries, pos)
            ins = handles()
            out.append(("call", op, site, ins, handles()))
        elif kind == 2:
            out.append(("release", handles()))
        else:
            raise AssertionError(f"unknown entry kind {kind} at byte {pos - 1}")
    return out


def commands_of(frame: bytes) -> List[Tuple[int, tuple]]:
    """(seq, command) of every command a ClientFrame stands for, runs expanded: their entries
    as ``decode_run`` gives them, Call messages as ("call", op_id, site_id, inputs, outputs,
    site text, whether it has attributes), Releases of handles as ("release", handles),
    anything else as (kind,)."""
    out: List[Tuple[int, tuple]] = []
    for c in pb.ClientFrame.FromString(frame).batch.commands:
        kind = c.WhichOneof("kind")
        if kind == "packed":
            run = decode_run(c.packed.entries)
            assert len(run) == c.packed.count >= 1, (len(run), c.packed.count)
            out.extend((c.seq + i, e) for i, e in enumerate(run))
        elif kind == "call":
            out.append((c.seq, ("call", c.call.op_id, c.call.site_id, list(c.call.inputs),
                                list(c.call.outputs), c.call.site, bool(c.call.attrs))))
        elif kind == "release" and not (c.release.events or c.release.shared_buffers):
            out.append((c.seq, ("release", list(c.release.handles))))
        else:
            out.append((c.seq, (kind,)))
    return out


def detached_session(packed: bool, max_cmds: int = 1024, max_bytes: int = 1 << 20) -> Any:
    """A ``Session`` with no connection: the open batch's state as ``Session.__init__`` sets it,
    the flusher asleep; its flushed frames collect in ``.frames``."""
    s = object.__new__(Session)
    lock = threading.Lock()
    s.__dict__.update(
        _lock=lock, _replies=threading.Condition(lock), _wake_flusher=threading.Condition(lock),
        _flusher_idle=False, _entries=[], _open=None, _frame_bytes=0, _packed=packed,
        _site_ids={}, _run=None, _run_index=0, _run_seq=0, _run_last=0, _seq=0, _sent_seq=0,
        _acked_seq=0, _next_handle=1, _handles=HandleTable(),
        _released=collections.deque(), _released_events=collections.deque(),
        _released_shared=collections.deque(), _broken=None, _closing=False, _busy=None,
        _grad_sent=True, _max_cmds=max_cmds, _max_bytes=max_bytes, _resume_enabled=True,
        _replay=ReplayLog(), _resuming=False, _transport=Transport(None), frames=[])
    s._put_frame = s.frames.append
    return s


def drive(s: Any, call: Callable[..., Any], steps: int, seed: int) -> Tuple[list, list]:
    """Issues ``steps`` random commands on the detached session ``s`` through ``call`` (a
    ``Session.call``): Calls with and without attributes, from a few call sites or none,
    Releases, Syncs and flushes. Returns the commands it expects the frames to stand for, in
    order and without the Releases (drained at flushes), and the handles it released."""
    rng = random.Random(seed)
    sites = [b""] + [_wire.encode_site(f"loop{k}.py:{k}") for k in range(1, 6)]
    bound: dict = {}
    want: list = []
    released: list = []
    for _ in range(steps):
        r = rng.random()
        s._flusher_idle = rng.random() < 0.1
        if r < 0.75:
            op = rng.choice([1, 5, 127, 128, 300])
            ins = [rng.choice([1, 7, 127, 128, 16383, 16384, 2**21 + 5])
                   for _ in range(rng.choice([0, 1, 2, 2, 2, 3]))]
            nout = rng.choice([1, 1, 1, 1, 0, 2])
            site = rng.choice(sites)
            attrs = rng.random() < 0.2
            op_part = _wire.op_fields(op, [("alpha", "f", 2.0)] if attrs else ())
            first, _, first_v = call(s, op, _wire.packed(ins), nout, site, op_part)
            assert first_v == _wire.varint(first)
            outs = list(range(first, first + nout))
            text = site[2:].decode()
            if not s._packed:
                want.append(("call", op, 0, ins, outs, text, attrs))
            elif site and site not in bound:  # bound by this Call: a message
                bound[site] = len(bound) + 1
                want.append(("call", op, bound[site], ins, outs, text, attrs))
            elif attrs:
                want.append(("call", op, bound.get(site, 0), ins, outs, "", attrs))
            else:
                want.append(("call", op, bound.get(site, 0), ins, outs))
        elif r < 0.88:
            handles = [rng.choice([3, 200, 70000]) + k for k in range(rng.randrange(1, 4))]
            s._released.extend(handles)
            released.extend(handles)
        elif r < 0.95:
            with s._lock:
                s._add_locked().sync.request_id = 1
                s._after_add_locked()
            want.append(("sync",))
        else:
            with s._lock:
                s._flush_locked()
    with s._lock:
        s._flush_locked()
    return want, released
