"""A session: a gRPC bidirectional stream to the daemon, and the machinery around it.

Threads (see docs/protocol.md for the wire semantics):
- the caller's threads append commands to the open batch (``_entries``, encoded by ``_wire``)
  under ``_lock``; handles and command seqs are allocated under the same lock, so they
  increase in command order (a thread that must wait for another's exclusive transfer,
  ``Batcher._exclusive_locked``, allocates only after that wait, and holds the lock from
  there until the command creating its handle is queued);
- a flusher thread sends the open batch at most ``flush_interval`` (2 ms) after its first
  command, unless a value read, a sync, or the size/count threshold sent it first; it is woken
  only from its idle sleep, never per batch (``Batcher._flush_loop``);
- flushed frames and tensor bytes go by the session's transport, chosen once at the Welcome
  (Note [Python transports]): ``LocalTransport`` (the region's command ring and mailbox, staging,
  cross-memory attach) or ``RemoteTransport`` (the stream, whose queue gRPC's own sender
  thread drains, and the bulk socket);
- a receiver thread (``_receiver``) applies replies and wakes waiters through ``_replies``;
  waiting is always on that condition, never a sleep. When the stream fails in transit it
  resumes the session on a new stream, transparently for the waiters.

Parts that own their state, each with a unit test of its own (tests/python/test_unit_*.py):
``_options.TransportOptions`` (which paths the session may take), ``_handle_table.HandleTable``
(handles' metadata from the Acks), ``_requests.RequestTable`` (requests by id, errors owed to
``synchronize``), ``_replay_log.ReplayLog`` (what a resume resends), ``_transport.Transport``
(one of two), ``_connection.Connection`` (one gRPC stream).

The methods that drive them are split by concern: ``_call.CallPath`` (``call``, packed runs),
``_batch.Batcher`` (the open batch, flushing, waiting), ``_receiver.Receiver`` (replies,
resume), ``_transfer.Transfers`` (Put/Get, handed to the transport but for tiny uploads),
``_shared.SharedBuffers`` (shared buffers' allocation and address ranges),
``_stream_commands.StreamCommands`` (streams, events, TF32), ``_grad_commands.GradCommands``
(Backward, requires_grad and .grad commands), ``_usage_commands.UsageCommands`` (the session's
own memory statistics, fallback reports); ``_connection.open_stream`` opens the stream. The open batch
(``_entries``, ``_run``, ``_seq``, ``_next_handle`` ...) stays in the session's own attributes:
the C per-op path (``_speedups_call.h``) reads and writes them in the session's ``__dict__``
(Note [GIL as the lock] in ``_speedups.c``).

Releases come from ``Tensor.__del__``, which may run inside any thread at any allocation,
including one holding ``_lock``: they only append to a deque (atomic under the GIL), and are
drained into a ``Release`` command (a packed run's entry where the daemon allows them) at the
next flush.

Per-op cost matters (a Python op should cost microseconds, not tens of them): ``call`` is the
hot path (``_call.py``), with the Call entry encoded inline from parts the caller precomputed
(op id field, the inputs' cached varints, the cached call-site field), and most Calls a few
varints in a packed run (Note [Python packed runs]); Acks are matched to the handle range
each batch allocated (``_handle_table``), so released temporaries cost no TensorMeta.
"""

from __future__ import annotations

import atexit
import collections
import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple, Union

import grpc

from . import _catalog, _errors, _options, _shm
from ._batch import Batcher, Replies
from ._call import CallPath
from ._connection import Connection, hello_frame, open_stream
from ._errors import Error
from ._grad_commands import GradCommands
from ._handle_table import HandleTable
from ._local_transport import LocalTransport
from ._meta import _Meta, _meta_from_proto
from ._proto import tensord_pb2 as pb
from ._receiver import Receiver
from ._remote_transport import RemoteTransport
from ._replay_log import ReplayLog
from ._requests import RequestTable
from ._shared import SharedBuffers
from ._stream_commands import StreamCommands
from ._tls import TlsCredentials
from ._transfer import Transfers
from ._transport import Transport
from ._usage_commands import UsageCommands
from ._version import __version__

DEFAULT_ADDRESS = "127.0.0.1:50051"
_MiB = 1 << 20


class Session(CallPath, Batcher, Receiver, Transfers, SharedBuffers, StreamCommands,
              GradCommands, UsageCommands):
    """One connection to a tensord daemon. Thread-safe.

    Most programs never touch this class: ``tensord.connect()`` creates one and makes it the
    default for ``tensord.randn`` and friends.

    With ``resume`` (the default), a stream that fails in transit (a reset connection, a
    restarted proxy) is resumed on a new stream to the same address within ``resume_timeout``
    seconds, without losing or repeating a command; the daemon keeps a detached session for its
    ``--resume_grace``. ``resumes`` counts the resumes so far.

    How commands and bytes travel (docs/transport.md; ``_options.TransportOptions`` resolves
    these): ``LocalTransport`` when the daemon offers a shared-memory region this process can
    map, else ``RemoteTransport``, chosen once (Note [Python transports]).

    Local: ``shm`` (ask for the region; default ``TENSORD_SHM`` != "0", False: remote
    whatever the host), ``ring`` (batches through its command ring), ``mailbox`` and
    ``sync_spin_us`` (``item()`` answered through its mailbox, the waiter's spin), ``cma``
    (uploads of 1 MiB or more by cross-memory attach). Remote: ``bulk`` (transfers of 1 MiB or
    more on the bulk socket; default ``TENSORD_BULK`` != "0"), ``bulk_lanes`` (its most
    connections), ``tune_malloc`` (``_malloc``). Both: ``download_cache_bytes`` (idle buffers
    kept for big ``numpy()`` results; 0: none; ``empty_download_cache()`` frees them).
    """

    def __init__(self, address: str = DEFAULT_ADDRESS, token: Optional[str] = None, *,
                 client_name: str = f"tensord-python/{__version__}", connect_timeout: float = 30.0,
                 flush_interval: float = 0.002, max_batch_commands: int = 1024,
                 max_batch_bytes: int = _MiB,
                 credentials: Union[grpc.ChannelCredentials, TlsCredentials, None] = None,
                 shm: Optional[bool] = None, resume: bool = True,
                 resume_timeout: float = 20.0, tune_malloc: bool = True,
                 download_cache_bytes: Optional[int] = None,
                 cma: Optional[bool] = None, bulk: Optional[bool] = None,
                 ring: bool = True,
                 mailbox: Optional[bool] = None, sync_spin_us: int = 200,
                 bulk_lanes: Optional[int] = None) -> None:
        self.address = address
        self._options = _options.resolve(
            shm, bulk, ring=ring, mailbox=mailbox, sync_spin_us=sync_spin_us, cma=cma,
            bulk_lanes=bulk_lanes, download_cache_bytes=download_cache_bytes,
            tune_malloc=tune_malloc)
        self._lock = threading.Lock()
        self._replies = Replies(self._lock)  # receiver → waiters
        self._wake_flusher = threading.Condition(self._lock)  # first command → flusher
        self._flusher_idle = False  # the flusher sleeps until woken (see Batcher._flush_loop)
        # The open batch: encoded Batch.commands entries (_wire), plus at most one protobuf
        # Command still being filled in (_open), encoded when the next command is added.
        self._entries: List[Any] = []
        self._open: Optional[pb.Command] = None
        self._frame_bytes = 0
        # Note [Python packed runs] (_call.py): off until the Welcome allows them
        self._packed = False
        self._site_ids: Dict[bytes, bytes] = {}
        self._run: Optional[bytearray] = None
        self._run_index = self._run_seq = self._run_last = 0
        self._seq = 0  # last seq allocated
        self._sent_seq = 0  # last seq handed to the stream
        self._acked_seq = 0  # last_seq of the last Ack received
        self._next_handle = 1
        # the acknowledged handles' metadata until their Tensors take it, matched against the
        # handles each batch allocated (the device names come with the Welcome)
        self._handles = HandleTable()
        self._released: "collections.deque[int]" = collections.deque()
        self._requests = RequestTable()  # Get/Sync/... waiting for replies; errors owed
        self._grad_sent = True  # the daemon starts with grad mode on
        # Streams and events (_streams.py): the current stream id (0: the session's default
        # stream), the next client-chosen stream and event ids, and the TF32 option as sent.
        self._stream_id = 0
        self._next_stream_id = 1
        self._next_event_id = 1
        self._allow_tf32 = False
        self._autocast = None  # the low dtype of tensord.autocast, or None (off)
        self._released_events: "collections.deque[int]" = collections.deque()  # Event.__del__
        # Shared buffers (_shared.py): (begin, end, region, shm offset) of each live one, and
        # the region ids freed, released with the next batch.
        self._shared_ranges: Tuple[Tuple[int, int, int, int], ...] = ()
        self._released_shared: "collections.deque[int]" = collections.deque()
        self._broken: Optional[Error] = None  # set once the session is over
        self._closing = False
        self._flush_interval = flush_interval
        self._max_cmds = max_batch_commands
        # Resume (_receiver): sent batches until acknowledged, the attempt under way.
        self._resume_enabled = resume
        self._resume_timeout = resume_timeout
        self._replay = ReplayLog()
        self._resuming = False
        self._attempt: Optional[Connection] = None
        self._stop = threading.Event()  # close(): stop resuming
        #: how many times the stream was resumed
        self.resumes = 0

        #: the PEM bytes of a TLS session (``credentials=TlsCredentials(...)``): its bulk
        #: socket's lanes speak TLS too; None for plaintext or opaque gRPC credentials
        self.tls: Optional[TlsCredentials] = (
            credentials if isinstance(credentials, TlsCredentials) else None)
        if self.tls is not None:
            credentials = self.tls.channel_credentials()
        self._credentials = credentials
        self._metadata = [("authorization", f"Bearer {token}")] if token else []
        self._token = token
        self._client_name = client_name
        conn, w = open_stream(address, credentials, self._metadata,
                              self._hello_frame(), connect_timeout)
        self._packed = w.packed_commands  # this version's daemon always allows them
        conn.start(())
        self._conn = conn
        self.welcome = w
        self.session_id: str = w.session_id
        self._secret: str = w.resume_secret
        self.server_version: str = w.server_version
        self.devices: List[str] = [d.name for d in w.devices]
        self._handles.device_names = tuple(self.devices)  # packed metas index them
        #: where commands that name no device put tensors, as this client last set it (the
        #: Welcome's, then ``set_options``'); None after a name that is none of ``devices``
        #: (the daemon resolves an alias, or refuses it): Note [Uploads know their meta]
        self.default_device: Optional[str] = w.default_device or "cpu"
        #: op name -> OpInfo, from the daemon's catalog
        self.catalog: Dict[str, _catalog.OpInfo] = _catalog.build(w.ops)
        self.chunk_bytes = int(w.chunk_bytes) or _MiB
        max_frame = int(w.max_frame_bytes) or 8 * _MiB
        # a batch is flushed before it would pass this; one Put chunk always fits in a frame
        self._max_bytes = max(4096, min(max_batch_bytes, max_frame // 2 - 4096))
        self.chunk_bytes = min(self.chunk_bytes, max_frame // 2)
        self._max_upload_frame = max(self._max_bytes, max_frame // 2 - 4096)
        self._busy: Optional[int] = None  # thread running a multi-command transfer

        #: how commands and bytes travel, chosen once (Note [Python transports])
        self._transport: Transport = _transport_for(self, w)
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
    def waits(self) -> int:
        """How many times a caller of this session blocked waiting for the daemon so far (a
        value read, an Ack, a sync): each costs a round trip to a remote daemon."""
        return self._replies.waits

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
            self._stop.set()  # a resume under way gives up
            attempt = self._attempt
            self._wake_flusher.notify_all()
        if attempt is not None:
            attempt.cancel()
        self._put_frame(None)
        self._receiver.join(timeout)
        self._conn.close()
        self._transport.close()
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

    def synchronize(self, host_only: bool = False) -> None:
        """Waits until the daemon ran every command sent so far; raises the first op error
        since the previous synchronize unless touching its value raised it already (spoiled
        values raise again when touched).
        ``host_only``: the daemon's executor reached this point (kernels launched), without
        waiting for the session's device streams to finish."""
        with self._lock:
            if self._busy is None:  # tensors dropped before the call are released before it
                self._drain_released_locked()  # (memory_allocated() after `del x` counts it)
            rid, p = self._request_locked()
            cmd = self._add_locked()
            p.seq = cmd.seq
            cmd.sync.request_id = rid
            cmd.sync.host_only = host_only
            self._flush_locked()
            self._wait_locked(p, rid)
            self._raise_checked_locked()  # answered by now: they precede this Sync
            error = self._requests.sync_error(p.error)
        if error is not None:
            raise _errors.fresh(error)

    def raised(self, err: Error) -> Error:
        """Notes that ``err``, a spoiled value's error, is being raised to the program (which
        may catch it): the next ``synchronize`` reports only errors not raised yet. The error
        stays with the value: touching it again raises it again. Returns a copy to raise."""
        self._requests.note_raised(err)
        return _errors.fresh(err)

    def set_options(self, *, grad_enabled: Optional[bool] = None,
                    default_device: Optional[str] = None, seed: Optional[int] = None,
                    profile: Optional[bool] = None, allow_tf32: Optional[bool] = None,
                    stream: Optional[int] = None, autocast: Any = None) -> None:
        """Queues ``SetOptions`` commands (they take effect in stream order).

        ``allow_tf32``: TF32 for float32 matmuls and convolutions on CUDA (off by default);
        ``stream``: the id of the stream later ops go onto (0: the default stream; see
        ``tensord.Stream``); ``autocast``: ``tensord.bfloat16`` or ``float16`` turns the
        daemon's mixed precision on, ``False`` off (``tensord.autocast``)."""
        with self._lock:
            self._check_open_locked()
            if grad_enabled is not None:
                self._add_locked().options.grad_enabled = bool(grad_enabled)
                self._grad_sent = bool(grad_enabled)
            if default_device is not None:
                self._add_locked().options.default_device = default_device
                self.default_device = default_device if default_device in self.devices else None
            if seed is not None:
                self._add_locked().options.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
            if profile is not None:
                self._add_locked().options.profile = bool(profile)
            if allow_tf32 is not None:
                self._add_locked().options.allow_tf32 = bool(allow_tf32)
                self._allow_tf32 = bool(allow_tf32)
            if stream is not None:
                self._add_locked().options.stream = int(stream)
                self._stream_id = int(stream)
            if autocast is not None:
                self._add_locked().options.autocast = autocast.proto if autocast else 0
                self._autocast = autocast or None
            self._after_add_locked()

    # ------------------------------------------------------ used by tensors and ops

    def _hello_frame(self, resume: Optional[Tuple[str, str, int]] = None) -> Any:
        """The Hello of this session's first stream, or of a resume (``resume``: id, secret,
        last acknowledged seq)."""
        return hello_frame(self._token, self._client_name, self._options, self.address, resume,
                           secure=self._credentials is not None, tls=self.tls)

    def meta(self, handle: int, seq: int, tensor: Any) -> Any:
        """``tensor._info``: made once from the TensorMeta the daemon acknowledged for ``handle``
        (created by command ``seq``), waiting for the Ack if needed. Each handle's meta is handed
        out once, to the first of the threads asking for the same Tensor's; the others find
        ``_info`` set under the lock."""
        def take() -> Any:  # this thread's, or another's made meanwhile
            if tensor._info is None:
                m = self._handles.take(handle)
                if m is not None:
                    tensor._info = m if type(m) is _Meta else _meta_from_proto(m)
            return tensor._info

        with self._lock:
            for waited in (False, True):
                info = take()
                if info is not None:
                    return info
                if self._broken is not None:
                    raise _errors.fresh(self._broken)
                if not waited:
                    if seq > self._sent_seq:
                        self._flush_locked()
                    self._want_ack_locked(seq)
                    self._replies.wait_for(lambda: self._handles.has(handle)
                                           or self._acked_seq >= seq or self._broken is not None)
        raise self._handles.missing(handle, seq)


def _transport_for(session: Session, welcome: Any) -> Transport:
    """The transport of a session whose Welcome is ``welcome``: local when the daemon offered
    a shared-memory region and it maps here, else remote."""
    region = _shm.Region.open(welcome.shm, session._options) if welcome.HasField("shm") else None
    if region is not None:
        return LocalTransport(session, welcome, region)
    return RemoteTransport(session, welcome)


_open_sessions: "weakref.WeakSet[Session]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for s in list(_open_sessions):
        try:
            s.close(timeout=2.0)
        except Exception:
            pass
