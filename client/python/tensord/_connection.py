"""One gRPC stream of a session: its channel, the call, the frames queued for it, and its
opening (``open_stream``: the Hello sent, the Welcome awaited and checked, the failures a caller
can act on raised as tensord errors).

A session starts with one ``Connection``; when that stream fails in transit, the receiver opens
another one to the same address with ``Hello{resume_...}`` (``_receiver``). Each connection has
its own bounded queue of encoded frames (gRPC's sender thread drains it through the request
iterator), so a dead stream's queue is simply dropped: whatever it held is still in the
session's unacknowledged batches and is resent on the next stream.

Frames go out through the call's request iterator, which gRPC's own sender thread drains: the
public API of grpcio's synchronous stream (docs/transport.md: no "direct send" any more).

The queue is a ``SimpleQueue`` (C: a put wakes the sender without Python-level Condition work)
bounded by two counters, each written by one side only: frames queued (by the session, under
its lock) and frames written (by the sender, once gRPC asks for the next one). A producer that
finds ``_MAX_QUEUED`` frames waiting sleeps on ``_space``, which the sender sets only while
someone waits for it.
"""

from __future__ import annotations

import collections
import queue
import threading
from queue import SimpleQueue
from typing import Any, Iterable, Iterator, Optional, Sequence, Tuple

import grpc

from . import _bulk, _command_ring, _data_frame, _errors
from ._errors import ConnectionLost, ProtocolError
from ._options import TransportOptions
from ._proto import tensord_pb2 as pb
from ._tls import TlsCredentials

PROTOCOL_VERSION = pb.PROTOCOL_VERSION_CURRENT
_MAX_QUEUED = 64  # frames queued for the sender before put() blocks (backpressure)
_OPTIONS = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
# Transport failures gRPC reports with codes other than UNAVAILABLE.
_TRANSPORT_WORDS = ("stream removed", "socket closed", "connection reset", "broken pipe",
                    "rst_stream", "goaway")


class AttemptTimeout(Exception):
    """No Welcome arrived within the attempt's time limit."""


def hello_frame(token: Optional[str], client_name: str, options: TransportOptions,
                address: str, resume: Optional[Tuple[str, str, int]] = None,
                secure: bool = False, tls: Optional[TlsCredentials] = None) -> pb.ClientFrame:
    """``ClientFrame{hello}`` of a session to ``address`` with ``options``; ``resume`` is
    (session id, secret, last acknowledged seq); ``secure``: the stream has credentials,
    ``tls`` those the bulk socket's lanes can use too (``_bulk.wanted``)."""
    frame = pb.ClientFrame()
    h = frame.hello
    h.protocol_version = PROTOCOL_VERSION
    h.token = token or ""
    h.client_name = client_name
    h.shm_transfer = options.shm
    # Note [Python command ring]
    h.command_ring = options.shm and options.ring and _command_ring.available
    h.bulk = _bulk.wanted(address, options, secure, tls)
    h.packed_acks = True  # Note [Packed metas]
    if resume is not None:
        h.resume_session_id, h.resume_secret, h.resume_received_seq = resume
    return frame


def is_transport_failure(code: int, details: str) -> bool:
    """True when a stream ended because the link failed (worth a resume), not because the
    daemon ended it with a status (bad token, killed session, shutdown)."""
    text = details.lower()
    if code == _errors.UNAVAILABLE:
        return "shutting down" not in text  # the daemon's own UNAVAILABLE at shutdown
    if code in (_errors.UNKNOWN, _errors.INTERNAL):
        return any(w in text for w in _TRANSPORT_WORDS)
    return False


def rpc_code(err: Any) -> Tuple[int, str]:
    """(status code as an int, details) of a ``grpc.RpcError``."""
    try:
        return err.code().value[0], err.details() or str(err.code())
    except Exception:  # not a grpc.Call
        return _errors.UNAVAILABLE, str(err)


class Connection:
    """A ``tensord.v1.Tensord/Session`` call on its own channel."""

    def __init__(self, address: str, credentials: Optional[grpc.ChannelCredentials],
                 metadata: Sequence[Tuple[str, str]], hello: pb.ClientFrame,
                 wait_for_ready: bool) -> None:
        self._out: "SimpleQueue[Optional[bytes]]" = SimpleQueue()
        self._put_count = 0  # frames queued (written under the session's lock only)
        self._done_count = 0  # queued frames written (by the sender thread only)
        self._space = threading.Event()  # set by the sender for a producer waiting for room
        self._space_wanted = False
        self.dead = False  # the stream failed or ended: frames put now are never sent
        self._resend: "collections.deque[bytes]" = collections.deque()
        self._ready = threading.Event()  # set once Welcome arrived (or the attempt is over)
        if credentials is not None:
            self._channel = grpc.secure_channel(address, credentials, options=_OPTIONS)
        else:
            self._channel = grpc.insecure_channel(address, options=_OPTIONS)
        rpc = self._channel.stream_stream(
            "/tensord.v1.Tensord/Session", request_serializer=_serialize,
            response_deserializer=_data_frame.deserialize)
        self.responses = rpc(self._requests(hello), metadata=list(metadata),
                             wait_for_ready=wait_for_ready)

    def welcome(self, timeout: float) -> Any:
        """Waits for the first frame (the Welcome). Raises ``grpc.RpcError``, ``StopIteration``
        or ``AttemptTimeout``. A watchdog cancels the call at ``timeout``
        (``grpc.channel_ready_future`` would leave a polling thread behind)."""
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            self.responses.cancel()

        watchdog = threading.Timer(max(timeout, 0.001), expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            return next(self.responses)
        except grpc.RpcError:
            if expired.is_set():
                raise AttemptTimeout() from None
            raise
        finally:
            watchdog.cancel()

    def start(self, resend: Iterable[bytes]) -> None:
        """Lets the request iterator go on: first ``resend`` (batches the daemon may not have
        applied), then whatever is queued. Called under the session's lock, after Welcome."""
        self._resend.extend(resend)
        self._put_count += len(self._resend)  # the sender counts them written as the rest
        self._ready.set()

    def frames(self) -> Iterator[Any]:
        """The replies after the Welcome."""
        return self.responses

    def put(self, frame: Optional[bytes], timeout: float) -> bool:
        """Queues ``frame`` for gRPC's sender (None: end the stream). Called under the
        session's lock. False when the queue stayed full for ``timeout`` seconds."""
        if frame is not None:
            if self.dead:
                return True  # never sent: the session's unacknowledged batches keep it
            if self._put_count - self._done_count >= _MAX_QUEUED:
                self._space_wanted = True
                self._space.clear()
                # re-checked after the flag is up: the sender sets _space after each write
                if self._put_count - self._done_count >= _MAX_QUEUED and not self.dead:
                    self._space.wait(timeout)
                self._space_wanted = False
                if self._put_count - self._done_count >= _MAX_QUEUED and not self.dead:
                    return False
            self._put_count += 1
        self._out.put(frame)
        return True

    def mark_dead(self) -> None:
        """The stream is over: empties the queue so a blocked sender returns at once."""
        self.dead = True
        self._ready.set()
        self._space.set()
        try:
            while True:
                self._out.get_nowait()
        except queue.Empty:
            pass
        self._out.put(None)  # ends the request iterator

    def cancel(self) -> None:
        """Cancels the call (close() during a resume attempt)."""
        self.responses.cancel()

    def close(self) -> None:
        """Ends the request iterator and closes the channel."""
        self.mark_dead()
        self._channel.close()

    def _requests(self, hello: pb.ClientFrame) -> Iterator[Any]:  # drained by gRPC's sender
        yield hello
        self._ready.wait()
        while self._resend and not self.dead:
            yield self._resend.popleft()
            self._done_count += 1  # gRPC asks for the next frame once this one is written
        get = self._out.get
        while True:
            frame = get()
            if frame is None:
                return
            yield frame
            self._done_count += 1
            if self._space_wanted:
                self._space.set()


def _serialize(frame: Any) -> bytes:
    """gRPC request serializer: batches arrive encoded, Hello as a message."""
    return frame if isinstance(frame, bytes) else frame.SerializeToString()


def open_stream(address: str, credentials: Optional[grpc.ChannelCredentials],
                metadata: Sequence[Tuple[str, str]], hello: Any,
                connect_timeout: float) -> Tuple[Connection, Any]:
    """A new stream to the daemon at ``address`` opened with ``hello`` (a ClientFrame), and
    the daemon's Welcome; the connection is not started (``Connection.start``)."""
    # wait_for_ready: a daemon that is still starting is waited for, up to connect_timeout
    conn = Connection(address, credentials, metadata, hello, wait_for_ready=True)
    try:
        first = conn.welcome(connect_timeout)
    except (grpc.RpcError, StopIteration, AttemptTimeout) as e:
        conn.close()
        if isinstance(e, AttemptTimeout):
            raise ConnectionLost(f"no tensord daemon answered at {address} within "
                                 f"{connect_timeout:g} s; is it running? (set "
                                 "TENSORD_ADDRESS or pass address=)",
                                 code=_errors.UNAVAILABLE, op="connect") from None
        if isinstance(e, StopIteration):
            raise ConnectionLost("the daemon ended the session before Welcome",
                                 code=_errors.UNAVAILABLE, op="connect") from None
        raise _errors.from_rpc_error(e, "connect") from None
    if first.WhichOneof("kind") != "welcome":
        conn.close()
        raise ProtocolError(f"expected Welcome, got {first.WhichOneof('kind')}", op="connect")
    w = first.welcome
    if w.protocol_version and w.protocol_version != PROTOCOL_VERSION:
        conn.close()
        raise ProtocolError(f"daemon speaks protocol {w.protocol_version}, this client "
                            f"{PROTOCOL_VERSION}", code=_errors.FAILED_PRECONDITION,
                            op="connect")
    return conn, w
