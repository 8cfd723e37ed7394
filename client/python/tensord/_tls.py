"""TLS for a session: one set of PEM bytes for both of its channels, the gRPC stream and the
bulk socket's lanes (docs/protocol.md "Bulk socket"). ``connect(credentials=TlsCredentials(...))``
verifies the daemon with ``root_certificates`` on both, and presents ``certificate_chain`` and
``private_key`` on both where the daemon asks for client certificates (mutual TLS). Opaque
``grpc.ssl_channel_credentials`` secure the stream only: their certificates cannot be read back,
so such a session asks for no bulk socket and moves every byte on the stream."""

from __future__ import annotations

import os
import socket
import ssl
import tempfile
import threading
from typing import Optional

import grpc


class TlsCredentials:
    """PEM bytes for a TLS session (``None`` roots: the system's, as gRPC's default)."""

    def __init__(self, root_certificates: Optional[bytes] = None,
                 private_key: Optional[bytes] = None,
                 certificate_chain: Optional[bytes] = None) -> None:
        if (private_key is None) != (certificate_chain is None):
            raise ValueError("private_key and certificate_chain go together")
        self.root_certificates = root_certificates
        self.private_key = private_key
        self.certificate_chain = certificate_chain
        self._context: Optional[ssl.SSLContext] = None
        self._lock = threading.Lock()

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """The gRPC stream's credentials."""
        return grpc.ssl_channel_credentials(self.root_certificates, self.private_key,
                                            self.certificate_chain)

    def context(self) -> ssl.SSLContext:
        """The lanes' client context (made once): the daemon's certificate verified against
        the roots and its host name, TLS 1.2 or later, the client certificate if any."""
        with self._lock:
            if self._context is None:
                self._context = self._make_context()
            return self._context

    def _make_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies certificate and host name
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.root_certificates is None:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        else:
            ctx.load_verify_locations(cadata=self.root_certificates.decode("ascii"))
        if self.certificate_chain is not None and self.private_key is not None:
            # ssl loads a chain and key from files only: a private directory, removed at once
            with tempfile.TemporaryDirectory(prefix="tensord-tls-") as tmp:
                cert = os.path.join(tmp, "cert.pem")
                key = os.path.join(tmp, "key.pem")
                for path, data in ((cert, self.certificate_chain), (key, self.private_key)):
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                ctx.load_cert_chain(cert, key)
        return ctx

    def wrap(self, sock: socket.socket, host: str) -> ssl.SSLSocket:
        """``sock`` (connected to ``host``) after the TLS handshake, within its timeout.
        Raises ``OSError`` (``ssl.SSLError`` included) when it fails."""
        return self.context().wrap_socket(sock, server_hostname=host)
