"""A session: one gRPC bidirectional stream to the daemon, and the machinery around it.

Threads (see docs/protocol.md for the wire semantics):
- the caller's threads append commands to the open batch (``_entries``, encoded by ``_wire``)
  under ``_lock``; handles and command seqs are allocated under the same lock, so they
  increase in command order;
- a flusher thread sends the open batch ``flush_interval`` (2 ms) after its first command, unless
  a value read, a sync, or the size/count threshold sent it first;
- gRPC's own thread drains ``_out`` (the request iterator) onto the stream;
- a receiver thread applies replies: Ack metadata, Data chunks, SyncDone and Error frames, and
  wakes waiters through ``_replies``. Waiting is always on that condition, never a sleep.

Releases come from ``Tensor.__del__``, which may run inside any thread at any allocation,
including one holding ``_lock``: they only append to a deque (atomic under the GIL), and are
drained into a ``Release`` command at the next flush.
"""

from __future__ import annotations

import atexit
import collections
import os
import queue
import threading
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

import grpc
import numpy as np

from . import _catalog, _errors, _grad, _shm, _wire
from ._errors import ConnectionLost, Error, ProtocolError
from ._proto import tensord_pb2 as pb

PROTOCOL_VERSION = 1
DEFAULT_ADDRESS = "127.0.0.1:50051"
_MiB = 1 << 20


class _Pending:
    """A reply someone waits for: a Get's data, or a SyncDone."""

    __slots__ = ("done", "error", "meta", "buf", "total", "shm_size")

    def __init__(self) -> None:
        self.done = False
        self.error: Optional[Error] = None
        self.meta: Any = None
        self.buf = bytearray()
        self.total = 0  # shared-memory Data: the tensor's bytes and this chunk's
        self.shm_size = 0


class Session:
    """One connection to a tensord daemon. Thread-safe.

    Most programs never touch this class: ``tensord.connect()`` creates one and makes it the
    default for ``tensord.randn`` and friends.
    """

    def __init__(self, address: str = DEFAULT_ADDRESS, token: Optional[str] = None, *,
                 client_name: str = "tensord-python", connect_timeout: float = 30.0,
                 flush_interval: float = 0.002, max_batch_commands: int = 1024,
                 max_batch_bytes: int = _MiB, credentials: Optional[grpc.ChannelCredentials] = None,
                 shm: Optional[bool] = None) -> None:
        self.address = address
        self._lock = threading.Lock()
        self._replies = threading.Condition(self._lock)  # receiver → waiters
        self._wake_flusher = threading.Condition(self._lock)  # first command → flusher
        self._out: "queue.Queue[Optional[pb.ClientFrame]]" = queue.Queue(maxsize=64)
        # The open batch: encoded Batch.commands entries (_wire), plus at most one protobuf
        # Command still being filled in (_open), encoded when the next command is added.
        self._entries: List[Any] = []
        self._open: Optional[pb.Command] = None
        self._frame_bytes = 0
        self._seq = 0  # last seq allocated
        self._sent_seq = 0  # last seq handed to the stream
        self._acked_seq = 0
        self._next_handle = 1
        self._acked_handle = 0  # highest handle seen in an Ack
        self._next_request = 1
        self._meta: Dict[int, Any] = {}  # handle -> TensorMeta, until its Tensor takes it
        self._dropped: set = set()  # released before their Ack arrived
        self._released: "collections.deque[int]" = collections.deque()
        self._pending: Dict[int, _Pending] = {}  # request_id -> Get/Sync waiting for replies
        self._frame_errors: List[Error] = []  # Error{request_id=0}: malformed batches
        self._grad_sent = True  # the daemon starts with grad mode on
        self._broken: Optional[Error] = None  # set once the stream is over
        self._closing = False
        self._flush_interval = flush_interval
        self._max_cmds = max_batch_commands

        metadata = [("authorization", f"Bearer {token}")] if token else []
        options = [("grpc.max_receive_message_length", -1),
                   ("grpc.max_send_message_length", -1)]
        if credentials is not None:
            self._channel = grpc.secure_channel(address, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        hello = pb.ClientFrame()
        hello.hello.protocol_version = PROTOCOL_VERSION
        hello.hello.token = token or ""
        hello.hello.client_name = client_name
        # same-host shared-memory transfer (_shm.py); TENSORD_SHM=0 turns it off
        hello.hello.shm_transfer = (shm if shm is not None
                                    else os.environ.get("TENSORD_SHM", "1") != "0")
        # wait_for_ready: a daemon that is still starting is waited for, up to connect_timeout
        # (a watchdog cancels the call; grpc.channel_ready_future would leave a polling thread
        # that makes every channel.close() take 200 ms).
        session_rpc = self._channel.stream_stream(
            "/tensord.v1.Tensord/Session", request_serializer=_serialize,
            response_deserializer=pb.ServerFrame.FromString)
        self._responses = session_rpc(self._requests(hello), metadata=metadata,
                                      wait_for_ready=True)
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            self._responses.cancel()

        watchdog = threading.Timer(connect_timeout, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            first = next(self._responses)
        except (grpc.RpcError, StopIteration) as e:
            watchdog.cancel()
            timed_out = expired.is_set()
            self._out.put(None)
            self._channel.close()
            if timed_out:
                raise ConnectionLost(f"no tensord daemon answered at {address} within "
                                     f"{connect_timeout:g} s; is it running? (set "
                                     "TENSORD_ADDRESS or pass address=)",
                                     code=_errors.UNAVAILABLE, op="connect") from None
            if isinstance(e, StopIteration):
                raise ConnectionLost("the daemon ended the session before Welcome",
                                     code=_errors.UNAVAILABLE, op="connect") from None
            raise _errors.from_rpc_error(e, "connect") from None
        watchdog.cancel()
        if first.WhichOneof("kind") != "welcome":
            raise ProtocolError(f"expected Welcome, got {first.WhichOneof('kind')}", op="connect")
        w = first.welcome
        if w.protocol_version and w.protocol_version != PROTOCOL_VERSION:
            raise ProtocolError(f"daemon speaks protocol {w.protocol_version}, this client "
                                f"{PROTOCOL_VERSION}", code=_errors.FAILED_PRECONDITION,
                                op="connect")
        self.welcome = w
        self.session_id: str = w.session_id
        self.server_version: str = w.server_version
        self.devices: List[str] = [d.name for d in w.devices]
        self.default_device: str = w.default_device or "cpu"
        #: op name -> OpInfo, from the daemon's catalog
        self.catalog: Dict[str, _catalog.OpInfo] = _catalog.build(w.ops)
        self.chunk_bytes = int(w.chunk_bytes) or _MiB
        max_frame = int(w.max_frame_bytes) or 8 * _MiB
        # a batch is flushed before it would pass this; one Put chunk always fits in a frame
        self._max_bytes = max(4096, min(max_batch_bytes, max_frame // 2 - 4096))
        self.chunk_bytes = min(self.chunk_bytes, max_frame // 2)
        #: the mapped shared-memory region, or None (the stream carries every byte)
        self._shm = _shm.Region.open(w.shm) if w.HasField("shm") else None
        self._busy: Optional[int] = None  # thread running a multi-command shm transfer

        self._receiver = threading.Thread(target=self._receive, name="tensord-receiver",
                                          daemon=True)
        self._flusher = threading.Thread(target=self._flush_loop, name="tensord-flusher",
                                         daemon=True)
        self._receiver.start()
        self._flusher.start()
        _open_sessions.add(self)

    # ------------------------------------------------------------------ public

    def __repr__(self) -> str:
        state = "closed" if self._closing else "open"
        return f"<tensord.Session {self.session_id} at {self.address} ({state})>"

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran or the stream ended."""
        return self._closing or self._broken is not None

    def close(self, timeout: float = 10.0) -> None:
        """Sends what is queued, ends the stream (the daemon releases every handle) and waits
        for the daemon to finish. Tensors of a closed session can no longer be used."""
        with self._lock:
            if self._closing:
                return
            if self._broken is None:
                self._flush_locked()
            self._closing = True
            self._wake_flusher.notify_all()
        self._put_frame(None)
        self._receiver.join(timeout)
        self._channel.close()
        _open_sessions.discard(self)

    def profile_fetch(self, clear: bool = True) -> Any:
        """The daemon's profiler records (a ``Profile`` message; see ``tensord.profiler``)."""
        with self._lock:
            rid, p = self._request_locked()
            cmd = self._add_locked()
            cmd.get_profile.request_id = rid
            cmd.get_profile.clear = clear
            self._flush_locked()
            self._wait_locked(p, rid)
        if p.error is not None:
            raise _errors.fresh(p.error)
        return p.meta

    def synchronize(self) -> None:
        """Waits until the daemon ran every command sent so far; raises the first op error
        raised since the previous synchronize (spoiled values raise again when touched)."""
        with self._lock:
            rid, p = self._request_locked()
            cmd = self._add_locked()
            cmd.sync.request_id = rid
            self._flush_locked()
            self._wait_locked(p, rid)
            frame_errors, self._frame_errors = self._frame_errors, []
        if p.error is not None:
            raise _errors.fresh(p.error)
        if frame_errors:
            raise _errors.fresh(frame_errors[0])

    def set_options(self, *, grad_enabled: Optional[bool] = None,
                    default_device: Optional[str] = None, seed: Optional[int] = None,
                    profile: Optional[bool] = None) -> None:
        """Queues ``SetOptions`` commands (they take effect in stream order)."""
        with self._lock:
            self._check_open_locked()
            if grad_enabled is not None:
                self._add_locked().options.grad_enabled = bool(grad_enabled)
                self._grad_sent = bool(grad_enabled)
            if default_device is not None:
                self._add_locked().options.default_device = default_device
            if seed is not None:
                self._add_locked().options.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
            if profile is not None:
                self._add_locked().options.profile = bool(profile)
            self._after_add_locked()

    # ------------------------------------------------------ used by tensors and ops

    def call(self, op_id: int, inputs: Sequence[int], attrs: Sequence[Tuple[str, str, Any]],
             num_outputs: int, site: str) -> Tuple[int, int]:
        """Queues a Call; returns (first output handle, seq). ``attrs`` are (name, AttrValue
        field, value) triples, already checked against the schema."""
        grad = _grad.is_grad_enabled()
        site_field = _site_field(site)
        with self._lock:
            if self._broken is not None or self._closing:
                self._check_open_locked()
            if self._busy is not None:
                self._wait_not_busy_locked()
            if grad != self._grad_sent:
                self._grad_mode_locked(grad)
            if self._open is not None:
                self._commit_locked()
            self._seq = seq = self._seq + 1
            first = self._next_handle
            self._next_handle = first + num_outputs
            entry = _wire.call_entry(seq, op_id, inputs, attrs, first, num_outputs, site_field)
            self._entries.append(entry)
            self._frame_bytes += len(entry)
            n = len(self._entries)
            if n >= self._max_cmds or self._frame_bytes >= self._max_bytes:
                self._flush_locked()
            elif n == 1:
                self._wake_flusher.notify()
        return first, seq

    def backward(self, roots: Sequence[int], grads: Sequence[int], *, retain_graph: bool,
                 create_graph: bool, inputs: Sequence[int] = (), allow_unused: bool = False,
                 site: str = "") -> Tuple[int, int]:
        """Queues one Backward (the whole backward pass); returns (first output handle, seq).
        Outputs exist only with ``inputs`` (autograd.grad): one new handle per input."""
        grad = _grad.is_grad_enabled()
        with self._lock:
            self._check_open_locked()
            self._grad_mode_locked(grad)
            cmd = self._add_locked()
            b = cmd.backward
            b.roots.extend(roots)
            b.grads.extend(grads)
            b.retain_graph = retain_graph
            b.create_graph = create_graph
            b.inputs.extend(inputs)
            first = self._next_handle
            self._next_handle += len(inputs)
            b.outputs.extend(range(first, first + len(inputs)))
            b.allow_unused = allow_unused
            b.site = site
            seq = cmd.seq
            self._after_add_locked()
        return first, seq

    def set_requires_grad(self, handle: int, requires_grad: bool, site: str) -> None:
        """Queues SetRequiresGrad (leaves only; on a non-leaf it fails like an op)."""
        with self._lock:
            self._check_open_locked()
            c = self._add_locked().set_requires_grad
            c.handle = handle
            c.requires_grad = requires_grad
            c.site = site
            self._after_add_locked()

    def get_grad(self, handle: int) -> Tuple[int, int]:
        """Queues GetGrad; returns (the new handle naming ``handle``'s .grad, seq). Its meta
        says ``is_none`` when there is no gradient."""
        with self._lock:
            self._check_open_locked()
            cmd = self._add_locked()
            out = self._next_handle
            self._next_handle += 1
            cmd.get_grad.handle = handle
            cmd.get_grad.output = out
            seq = cmd.seq
            self._after_add_locked()
        return out, seq

    def set_grad(self, handle: int, grad: int) -> None:
        """Queues SetGrad (``grad = 0``: None)."""
        with self._lock:
            self._check_open_locked()
            c = self._add_locked().set_grad
            c.handle = handle
            c.grad = grad
            self._after_add_locked()

    def put(self, data: np.ndarray, dtype_proto: int, shape: Sequence[int], device: str,
            requires_grad: bool, site: str) -> Tuple[int, int]:
        """Uploads ``data`` (already in wire layout) into a new handle, in chunks of at most
        ``chunk_bytes``; returns (handle, seq of the last chunk)."""
        flat = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        raw = memoryview(flat)
        total = raw.nbytes
        with self._lock:
            self._check_open_locked()
            handle = self._next_handle
            self._next_handle += 1
            if self._shm is not None and total >= _shm.MIN_BYTES:
                def fields(cmd: Any, offset: int, n: int, last: bool) -> None:
                    p = cmd.put
                    p.handle = handle
                    p.offset = offset
                    p.last = last
                    if offset == 0:
                        p.dtype = dtype_proto
                        p.shape.extend(shape)
                        p.device = device
                        p.requires_grad = requires_grad
                        p.site = site
                return handle, self._exclusive_locked(lambda: _shm.upload(self, flat, fields))
            self._busy = threading.get_ident()  # no Release between chunks
            try:
                seq = self._put_stream_locked(raw, handle, dtype_proto, shape, device,
                                              requires_grad, site)
            finally:
                self._busy = None
            self._after_add_locked()
        return handle, seq

    def _put_stream_locked(self, raw: memoryview, handle: int, dtype_proto: int,
                           shape: Sequence[int], device: str, requires_grad: bool,
                           site: str) -> int:
        """Appends the Put chunks of ``raw`` for the stream; returns the last one's seq."""
        total = raw.nbytes
        step = self.chunk_bytes
        offset = 0
        while True:
            chunk = raw[offset:offset + step]
            n = len(chunk)
            if self._frame_bytes + n > self._max_bytes and self._count_locked():
                self._flush_locked()
            cmd = pb.Command()
            p = cmd.put
            p.handle = handle
            p.offset = offset
            if offset == 0:
                p.dtype = dtype_proto
                p.shape.extend(shape)
                p.device = device
                p.requires_grad = requires_grad
                p.site = site
            offset += n
            if offset >= total:
                p.last = True
            if self._open is not None:
                self._commit_locked()
            self._seq = seq = self._seq + 1
            self._entries.append(_wire.put_header_entry(seq, cmd, n))
            self._frame_bytes += n + 64
            if n >= _BIG_CHUNK:  # sent (joined, i.e. copied) before put() returns
                self._entries.append(chunk)
                self._flush_locked()
            else:
                self._entries.append(bytes(chunk))
            if offset >= total:
                return seq

    def get(self, handle: int, site: str, nbytes: Optional[int] = None) -> Tuple[Any, Any]:
        """Downloads a handle's values: (TensorMeta, little-endian bytes). Raises its error.
        ``nbytes`` (when the caller knows the size) lets big tensors use shared memory."""
        if self._shm is not None and nbytes is not None and nbytes >= _shm.MIN_BYTES:
            with self._lock:
                self._check_open_locked()
                return self._exclusive_locked(
                    lambda: _shm.download(self, handle, nbytes, site))
        with self._lock:
            rid, p = self._request_locked()
            cmd = self._add_locked()
            cmd.get.handle = handle
            cmd.get.request_id = rid
            cmd.get.site = site
            self._flush_locked()
            self._wait_locked(p, rid)
        if p.error is not None:
            raise _errors.fresh(p.error)
        return p.meta, p.buf

    def _exclusive_locked(self, fn: Any) -> Any:
        """Runs ``fn`` (which may wait on ``_replies``) with other threads' commands held back."""
        self._wait_not_busy_locked()
        self._busy = threading.get_ident()
        try:
            return fn()
        finally:
            self._busy = None
            self._replies.notify_all()

    def peek_nbytes(self, handle: int) -> Optional[int]:
        """The byte size of ``handle`` if its Ack already arrived (no waiting)."""
        m = self._meta.get(handle)
        if m is None or m.HasField("error"):
            return None
        n = _ITEMSIZE.get(m.dtype, 0)
        for d in m.shape:
            n *= d
        return n

    def meta(self, handle: int, seq: int) -> Any:
        """The TensorMeta the daemon acknowledged for ``handle`` (created by command ``seq``),
        waiting for the Ack if needed. Each handle's meta is handed out once."""
        with self._lock:
            m = self._meta.pop(handle, None)
            if m is not None:
                return m
            if self._broken is not None:
                raise _errors.fresh(self._broken)
            if seq > self._sent_seq:
                self._flush_locked()
            self._replies.wait_for(lambda: handle in self._meta or self._acked_seq >= seq
                                   or self._broken is not None)
            m = self._meta.pop(handle, None)
            if m is not None:
                return m
            if self._broken is not None:
                raise _errors.fresh(self._broken)
        raise ProtocolError(f"the daemon acknowledged command {seq} without metadata for "
                            f"handle {handle}", op="ack")

    def release(self, handle: int) -> None:
        """Queues ``handle`` for a batched Release. Safe from finalizers in any thread."""
        if self._closing or self._broken is not None:
            return
        self._released.append(handle)
        if self._entries or self._open is not None:
            return  # a batch is open: its flush (at most one interval away) drains releases
        if self._lock.acquire(blocking=False):  # never block: we may be inside our own lock
            try:
                self._wake_flusher.notify()
            finally:
                self._lock.release()

    def flush(self) -> None:
        """Sends the open batch now."""
        with self._lock:
            if self._broken is None and not self._closing:
                self._flush_locked()

    # ----------------------------------------------------------------- internals

    def _check_open_locked(self) -> None:
        if self._broken is not None:
            raise _errors.fresh(self._broken)
        if self._closing:
            raise ConnectionLost("the session is closed", code=_errors.CANCELLED, op="session")

    def _grad_mode_locked(self, grad: bool) -> None:
        # the daemon sees the grad mode of the thread that issued each command, in stream order
        if grad != self._grad_sent:
            self._add_locked().options.grad_enabled = grad
            self._grad_sent = grad

    def _add_locked(self) -> Any:
        """A new protobuf Command with the next seq, encoded into the batch when the next
        command is added or the batch is sent."""
        if self._busy is not None:
            self._wait_not_busy_locked()
        if self._open is not None:
            self._commit_locked()
        cmd = self._open = pb.Command()
        self._seq += 1
        cmd.seq = self._seq
        self._frame_bytes += 64
        return cmd

    def _wait_not_busy_locked(self) -> None:
        # a shm transfer's commands must stay consecutive: other threads wait for its end
        me = threading.get_ident()
        if self._busy != me:
            self._replies.wait_for(lambda: self._busy is None or self._broken is not None)
            self._check_open_locked()

    def _commit_locked(self) -> None:
        cmd, self._open = self._open, None
        self._entries.append(_wire.message_entry(cmd.seq, cmd))

    def _count_locked(self) -> int:
        return len(self._entries) + (self._open is not None)

    def _after_add_locked(self) -> None:
        n = self._count_locked()
        if n >= self._max_cmds or self._frame_bytes >= self._max_bytes:
            self._flush_locked()
        elif n == 1:
            self._wake_flusher.notify()

    def _request_locked(self) -> Tuple[int, _Pending]:
        self._check_open_locked()
        rid = self._next_request
        self._next_request += 1
        p = _Pending()
        self._pending[rid] = p
        return rid, p

    def _wait_locked(self, p: _Pending, rid: int) -> None:
        self._replies.wait_for(lambda: p.done or self._broken is not None)
        self._pending.pop(rid, None)
        if not p.done:
            p.error = self._broken

    def _drain_released_locked(self) -> None:
        if not self._released:
            return
        handles = []
        while True:
            try:
                h = self._released.popleft()
            except IndexError:
                break
            handles.append(h)
            if self._meta.pop(h, None) is None and h > self._acked_handle:
                self._dropped.add(h)  # its Ack is still to come: don't keep that meta
        self._add_locked().release.handles.extend(handles)

    def _flush_locked(self) -> None:
        if self._busy is None:  # never between the chunks of one upload
            self._drain_released_locked()
        if self._open is not None:
            self._commit_locked()
        if not self._entries:
            return
        frame = _wire.frame(self._entries)
        self._sent_seq = self._seq
        self._entries = []
        self._frame_bytes = 0
        self._put_frame(frame)

    def _put_frame(self, frame: Optional[bytes]) -> None:
        # Bounded queue: backpressure on huge uploads. gRPC's sender never takes our lock.
        while True:
            try:
                self._out.put(frame, timeout=0.5)
                return
            except queue.Full:
                if self._broken is not None:
                    return

    def _requests(self, hello: pb.ClientFrame):  # the request iterator gRPC drains
        yield hello
        while True:
            frame = self._out.get()
            if frame is None:
                return
            yield frame

    def _flush_loop(self) -> None:
        with self._lock:
            while not self._closing and self._broken is None:
                if not self._count_locked() and not self._released:
                    self._wake_flusher.wait()
                    continue
                # let the batch grow for one interval, then send whatever is there
                self._wake_flusher.wait(self._flush_interval)
                if not self._closing and self._broken is None:
                    self._flush_locked()

    def _receive(self) -> None:
        err: Optional[Error] = None
        try:
            for frame in self._responses:
                kind = frame.WhichOneof("kind")
                with self._lock:
                    if kind == "ack":
                        self._on_ack(frame.ack)
                    elif kind == "data":
                        self._on_data(frame.data)
                    elif kind == "sync_done":
                        p = self._pending.get(frame.sync_done.request_id)
                        if p is not None:
                            if frame.sync_done.error.code:
                                p.error = _errors.from_status(frame.sync_done.error)
                            p.done = True
                    elif kind == "error":
                        self._on_error(frame.error)
                    elif kind == "profile":
                        p = self._pending.get(frame.profile.request_id)
                        if p is not None:
                            p.meta = frame.profile
                            p.done = True
                    self._replies.notify_all()
            err = ConnectionLost("the daemon ended the session", code=_errors.UNAVAILABLE,
                                 op="session")
        except grpc.RpcError as e:
            err = _errors.from_rpc_error(e)
        except Exception as e:  # a bug here must not leave waiters hanging
            err = ProtocolError(f"receiver failed: {e!r}", op="session")
        with self._lock:
            if self._closing and err.code in (_errors.UNAVAILABLE, _errors.CANCELLED):
                err = ConnectionLost("the session is closed", code=_errors.CANCELLED,
                                     op="session")
            self._broken = err
            self._replies.notify_all()
            self._wake_flusher.notify_all()

    def _on_ack(self, ack: Any) -> None:
        self._acked_seq = ack.last_seq
        for m in ack.created:
            h = m.handle
            if h > self._acked_handle:
                self._acked_handle = h
            if self._dropped and h in self._dropped:
                self._dropped.discard(h)
            else:
                self._meta[h] = m
        if self._dropped:
            self._dropped = {h for h in self._dropped if h > self._acked_handle}

    def _on_data(self, d: Any) -> None:
        p = self._pending.get(d.request_id)
        if p is None:
            return
        if d.shm:  # one ranged chunk, already in the region
            p.meta = d.meta
            p.total = d.total_bytes
            p.shm_size = d.shm_size
            p.done = True
            return
        if d.HasField("meta"):
            p.meta = d.meta
            if d.total_bytes:
                p.buf = bytearray(d.total_bytes)
        n = len(d.data)
        if n:
            if d.offset + n > len(p.buf):
                p.buf.extend(bytes(d.offset + n - len(p.buf)))
            p.buf[d.offset:d.offset + n] = d.data
        if d.last:
            p.done = True

    def _on_error(self, e: Any) -> None:
        err = _errors.from_status(e.status)
        p = self._pending.get(e.request_id) if e.request_id else None
        if p is not None:
            p.error = err
            p.done = True
        else:
            self._frame_errors.append(err)


_open_sessions: "weakref.WeakSet[Session]" = weakref.WeakSet()
_ITEMSIZE = {pb.FLOAT32: 4, pb.FLOAT64: 8, pb.FLOAT16: 2, pb.BFLOAT16: 2, pb.INT64: 8,
             pb.INT32: 4, pb.INT8: 1, pb.UINT8: 1, pb.BOOL: 1}
_BIG_CHUNK = 64 << 10  # Put chunks at least this big are sent without an extra copy
_site_fields: Dict[str, bytes] = {}


def _site_field(site: str) -> bytes:
    """The encoded ``Call.site`` field, cached per call site."""
    f = _site_fields.get(site)
    if f is None:
        if len(_site_fields) > 4096:
            _site_fields.clear()
        f = _site_fields[site] = _wire.encode_site(site)
    return f


def _serialize(frame: Any) -> bytes:
    """gRPC request serializer: batches arrive encoded, Hello as a message."""
    return frame if isinstance(frame, bytes) else frame.SerializeToString()


@atexit.register
def _close_all() -> None:
    for s in list(_open_sessions):
        try:
            s.close(timeout=2.0)
        except Exception:
            pass
