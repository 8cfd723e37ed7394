"""The bulk socket under TLS (docs/protocol.md "Bulk socket", server/bulk_tls.h, ``_tls.py``):
against the real daemon serving TLS (and mutual TLS) with certificates made by openssl here, a
session given ``TlsCredentials`` connects its lanes through TLS and moves big transfers on them
bit-exact; a plaintext connection or one without the client certificate is refused without an
answer; a stalled handshake holds only its own connection, never another session's lanes; a
session given opaque gRPC credentials asks for no socket and moves its bytes on the stream."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import tempfile
from typing import Dict, Iterator, List, Tuple

import grpc
import numpy as np
import pytest
import torch

import tensord as td
from conftest import running_daemon
from tensord import _bulk

MiB = 1 << 20


@pytest.fixture(scope="module")
def certs() -> Iterator[Dict[str, str]]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate (paths by name)."""
    with tempfile.TemporaryDirectory(prefix="tensord-tls-test-") as d:
        quiet = {"cwd": d, "check": True, "stdout": subprocess.DEVNULL,
                 "stderr": subprocess.DEVNULL}
        req = ["openssl", "req", "-newkey", "rsa:2048", "-nodes"]
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=test-ca"],
                       **quiet)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        "other-ca.key", "-out", "other-ca.pem", "-days", "1", "-subj",
                        "/CN=another-ca"], **quiet)
        with open(os.path.join(d, "san.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost")
        for name in ("server", "client"):
            subprocess.run(req + ["-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj",
                                  f"/CN={name}"], **quiet)
            subprocess.run(["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem",
                            "-CAkey", "ca.key", "-CAcreateserial", "-out", f"{name}.pem",
                            "-days", "1"] + (["-extfile", "san.ext"] if name == "server"
                                             else []), **quiet)
        yield {n: os.path.join(d, n) for n in ("ca.pem", "server.pem", "server.key",
                                                "client.pem", "client.key", "other-ca.pem")}


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def tls_daemon(certs: Dict[str, str]) -> Iterator[str]:
    with running_daemon(f"--tls_cert={certs['server.pem']}",
                        f"--tls_key={certs['server.key']}") as address:
        yield address


@pytest.fixture(scope="module")
def mtls_daemon(certs: Dict[str, str]) -> Iterator[str]:
    with running_daemon(f"--tls_cert={certs['server.pem']}", f"--tls_key={certs['server.key']}",
                        f"--tls_client_ca={certs['ca.pem']}") as address:
        yield address


def _tls(certs: Dict[str, str], client_cert: bool = False) -> td.TlsCredentials:
    if not client_cert:
        return td.TlsCredentials(_read(certs["ca.pem"]))
    return td.TlsCredentials(_read(certs["ca.pem"]), _read(certs["client.key"]),
                             _read(certs["client.pem"]))


def _random(nbytes: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(nbytes // 4).astype(np.float32)


def _round_trip(s: td.Session, lane_io: List[Tuple[str, int, int]], nbytes: int,
                seed: int) -> None:
    """An upload, a download of a known size, one into ``out=`` and one of a fresh result, all
    on the lanes and bit-exact (PyTorch computes the result's values)."""
    a = _random(nbytes, seed)
    x = td.tensor(a)
    assert x.numpy().tobytes() == a.tobytes()
    out = np.empty_like(a)
    assert x.numpy(out=out) is out and out.tobytes() == a.tobytes()
    want = (torch.from_numpy(a) * 2 + 1).numpy()
    assert (x * 2 + 1).numpy().tobytes() == want.tobytes()
    lanes = _bulk.lanes_for(nbytes, s._transport.lanes.connected)
    assert lane_io == [("upload", nbytes, lanes)] + [("download", nbytes, lanes)] * 3
    lane_io.clear()


def _tls_lanes(s: td.Session) -> List[socket.socket]:
    socks = s._transport.lanes.socks
    assert socks and all(isinstance(k, ssl.SSLSocket) for k in socks)
    return socks


@pytest.mark.parametrize("nbytes", [MiB + 4, 8 * MiB + 12, 33 * MiB + 12])
def test_transfers_on_tls_lanes_arrive_as_sent(tls_daemon: str, certs: Dict[str, str],
                                               lane_io: List[Tuple[str, int, int]],
                                               nbytes: int) -> None:
    with td.connect(tls_daemon, shm=False, credentials=_tls(certs)) as s:
        assert s.welcome.bulk_port > 0  # the daemon serves TLS and offers the socket
        _round_trip(s, lane_io, nbytes, seed=nbytes)
        assert len(_tls_lanes(s)) == s.welcome.bulk_lanes
        assert s._transport.lanes.state is True


def test_mutual_tls_lanes_present_the_client_certificate(
        mtls_daemon: str, certs: Dict[str, str], lane_io: List[Tuple[str, int, int]]) -> None:
    with td.connect(mtls_daemon, shm=False, credentials=_tls(certs, client_cert=True)) as s:
        _round_trip(s, lane_io, 9 * MiB, seed=1)
        _tls_lanes(s)
        # A lane without the client certificate is refused in its handshake.
        raw = socket.create_connection(("127.0.0.1", s.welcome.bulk_port), timeout=10)
        with pytest.raises(OSError):
            lane = _tls(certs).wrap(raw, "127.0.0.1")  # TLS 1.3: the refusal comes on read
            lane.sendall(b"TDBULK02" + s.welcome.bulk_token.encode() + bytes([1]))
            assert lane.recv(1) == b"", "a lane without a client certificate was answered"
            raise OSError("closed without an answer")
        raw.close()


def test_a_plaintext_lane_is_refused_and_the_session_keeps_its_tls_lanes(
        tls_daemon: str, certs: Dict[str, str], lane_io: List[Tuple[str, int, int]]) -> None:
    with td.connect(tls_daemon, shm=False, credentials=_tls(certs)) as s:
        # The right token, in the clear, before the session's own lanes connect.
        plain = socket.create_connection(("127.0.0.1", s.welcome.bulk_port), timeout=10)
        plain.sendall(b"TDBULK01" + s.welcome.bulk_token.encode())
        try:
            answer = plain.recv(1)
        except ConnectionResetError:
            answer = b""
        assert answer[:1] != b"Y"  # no kBulkAccepted: closed (a TLS alert at most)
        plain.close()
        # The token still admits lane 0: the refusal attached nothing.
        _round_trip(s, lane_io, 9 * MiB, seed=2)
        _tls_lanes(s)


def test_a_session_with_grpc_credentials_takes_the_stream(
        tls_daemon: str, certs: Dict[str, str], lane_io: List[Tuple[str, int, int]]) -> None:
    creds = grpc.ssl_channel_credentials(_read(certs["ca.pem"]))
    with td.connect(tls_daemon, shm=False, credentials=creds) as s:
        assert not s._transport.lanes.wanted  # no certificates to make its lanes secure with
        a = _random(9 * MiB, 3)
        assert td.tensor(a).numpy().tobytes() == a.tobytes()
        assert lane_io == [] and s._transport.lanes.connected == 0


def test_a_failed_lane_handshake_leaves_that_session_on_the_stream(
        tls_daemon: str, certs: Dict[str, str], lane_io: List[Tuple[str, int, int]]) -> None:
    """Lanes whose handshake fails (roots that do not verify the daemon) say why, and the
    session moves its bytes on the stream; another session's lanes are not affected."""
    with td.connect(tls_daemon, shm=False, credentials=_tls(certs)) as s:
        s._transport.lanes.tls = td.TlsCredentials(_read(certs["other-ca.pem"]))
        a = _random(9 * MiB, 5)
        x = td.tensor(a)
        assert x.numpy().tobytes() == a.tobytes()
        assert lane_io == [] and s._transport.lanes.state is False
        assert "TLS" in s._transport.lanes.refused
        assert "CERTIFICATE_VERIFY_FAILED" in s._transport.lanes.refused
        with td.connect(tls_daemon, shm=False, credentials=_tls(certs)) as other:
            _round_trip(other, lane_io, 9 * MiB, seed=6)
            _tls_lanes(other)
        assert (x * 3).numpy().tobytes() == (torch.from_numpy(a) * 3).numpy().tobytes()


def _stalled_handshakes(port: int) -> List[socket.socket]:
    """Connections to the bulk port that stall: one silent, one half-way through its TLS
    ClientHello."""
    silent = socket.create_connection(("127.0.0.1", port), timeout=10)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    half = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        half.do_handshake()
    hello = outgoing.read()
    partial = socket.create_connection(("127.0.0.1", port), timeout=10)
    partial.sendall(hello[: len(hello) // 2])
    return [silent, partial]


def _still_open(sock: socket.socket) -> bool:
    """Whether the daemon has neither closed nor answered ``sock`` (asked without waiting)."""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    except OSError:  # reset
        return False
    finally:
        sock.settimeout(timeout)
    return False


def test_a_stalled_handshake_does_not_delay_another_sessions_lanes(
        tls_daemon: str, certs: Dict[str, str], lane_io: List[Tuple[str, int, int]]) -> None:
    with td.connect(tls_daemon, shm=False, credentials=_tls(certs)) as s:
        stalled = _stalled_handshakes(s.welcome.bulk_port)
        try:
            # The lanes connect and move the bytes while both stalled connections are still
            # held (the daemon drops them after 2 s; a blocked acceptor would admit the lanes
            # only then).
            _round_trip(s, lane_io, 9 * MiB, seed=4)
            _tls_lanes(s)
            assert all(_still_open(k) for k in stalled)
            # ...and each stalled one is closed in the end, without an answer.
            for k in stalled:
                try:
                    assert k.recv(1) == b""
                except ConnectionResetError:
                    pass
        finally:
            for k in stalled:
                k.close()


def test_wanted_needs_certificates_for_a_secure_stream() -> None:
    from tensord._options import resolve

    opts = resolve(False, True)
    assert _bulk.wanted("127.0.0.1:1", opts)
    assert not _bulk.wanted("127.0.0.1:1", opts, secure=True)
    assert _bulk.wanted("127.0.0.1:1", opts, secure=True, tls=td.TlsCredentials(b""))
    with pytest.raises(ValueError):
        td.TlsCredentials(b"", private_key=b"k")
