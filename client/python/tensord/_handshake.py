"""Opening a session's stream: the Hello sent, the Welcome awaited and checked, and the
failures a caller can act on (no daemon, a refused or wrong-version handshake) raised as
tensord errors."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import grpc

from . import _errors
from ._connection import PROTOCOL_VERSION, AttemptTimeout, Connection
from ._errors import ConnectionLost, ProtocolError


def open_stream(address: str, credentials: Optional[grpc.ChannelCredentials],
                metadata: List[Tuple[str, str]], hello: Any,
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
