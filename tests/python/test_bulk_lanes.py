"""The bulk socket's lanes (docs/protocol.md "Bulk socket", proto/bulk_socket.h; ``_bulk.py``)
against the real daemon over TCP loopback, without a shared-memory region: the session connects
``min(Welcome.bulk_lanes, connect(bulk_lanes=))`` lanes, stripes transfers of 8 MiB or more over
them in both directions with the bytes arriving as sent, keeps the lanes from 0 up to the first
one refused, and falls back to the stream for good when a lane breaks mid-transfer. The daemon
admits each lane of a token once and only the lanes it offered."""

from __future__ import annotations

import socket
import threading
from typing import Iterator, List, Optional, Tuple

import numpy as np
import pytest

import tensord as td
from conftest import running_daemon
from tensord import _bulk

MiB = 1 << 20


@pytest.fixture(scope="module")
def daemon_1_lane() -> Iterator[str]:
    with running_daemon("--bulk_lanes=1") as address:
        yield address


@pytest.fixture(scope="module")
def daemon_3_lanes() -> Iterator[str]:
    with running_daemon("--bulk_lanes=3") as address:
        yield address


def _random(nbytes: int, seed: int, dtype=np.float32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 256, nbytes, dtype=np.uint8)
    return rng.standard_normal(nbytes // np.dtype(dtype).itemsize).astype(dtype)


def _hello(port: int, hello: bytes) -> Tuple[bytes, socket.socket]:
    """The daemon's answer to a raw ``hello`` on its bulk port (b"": closed without one) and
    the connection (open: an accepted lane stays attached while it is)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(hello)
    try:
        answer = sock.recv(1)
    except ConnectionResetError:
        answer = b""
    return answer, sock


def _lane_hello(w, lane: int) -> bytes:
    token = w.bulk_token.encode()
    return b"TDBULK01" + token if lane == 0 else b"TDBULK02" + token + bytes([lane])


# (daemon fixture, connect(bulk_lanes=), lanes the daemon offers, lanes the session connects)
CONFIGS = [("daemon", None, 4, 4), ("daemon", 1, 4, 1), ("daemon", 2, 4, 2),
           ("daemon", 8, 4, 4), ("daemon_1_lane", None, 1, 1),
           ("daemon_3_lanes", None, 3, 3), ("daemon_3_lanes", 2, 3, 2)]


@pytest.mark.parametrize("which, cap, offered, connected", CONFIGS,
                         ids=[f"{w}-cap{c}" for w, c, _, _ in CONFIGS])
def test_transfers_are_striped_and_arrive_as_sent(
        request: pytest.FixtureRequest, lane_io: List[Tuple[str, int, int]], which: str,
        cap: Optional[int], offered: int, connected: int) -> None:
    address = request.getfixturevalue(which)
    with td.connect(address, shm=False, bulk_lanes=cap) as s:
        assert s.welcome.bulk_lanes == offered
        assert s._transport.lanes.connected == 0  # not before the first big transfer
        # 8 MiB + 12345 and 33 MiB + 12: spans that are not multiples of 64 KiB (a split
        # unlike the daemon's leaves a lane waiting for bytes that never come)
        for seed, (nbytes, dtype) in enumerate([(MiB, np.float32), (8 * MiB + 12345, np.uint8),
                                                (33 * MiB, np.float32),
                                                (33 * MiB + 12, np.float32)]):
            a = _random(nbytes, seed, dtype)
            x = td.tensor(a)
            assert s._transport.lanes.connected == connected
            back = x.numpy()  # the size known: asked on the socket
            assert back.tobytes() == a.tobytes()
            out = np.empty_like(a)
            assert x.numpy(out=out) is out
            assert out.tobytes() == a.tobytes()
            lanes = _bulk.lanes_for(nbytes, connected)
            want = [("upload", nbytes, lanes), ("download", nbytes, lanes),
                    ("download", nbytes, lanes)]
            if dtype == np.float32:  # a fresh result: its size not known, the daemon decides
                np.testing.assert_array_equal((x * 2 + 1).numpy(), a * 2 + 1)
                want.append(("download", nbytes, lanes))
            assert lane_io == want
            lane_io.clear()
        assert s._transport.lanes.state is True


def test_threads_share_the_lanes(daemon: str, lane_io: List[Tuple[str, int, int]]) -> None:
    """Transfers of several threads take turns on the lanes (each is exclusive)."""
    failures: List[BaseException] = []
    with td.connect(daemon, shm=False) as s:
        def work(k: int) -> None:
            try:
                for i in range(3):
                    a = _random(9 * MiB + 4 * k + 4 * i, 100 * k + i)
                    x = td.tensor(a)
                    np.testing.assert_array_equal((x - 1).numpy(), a - 1)
            except BaseException as e:  # noqa: B902 (reported by the main thread)
                failures.append(e)
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not failures, failures
        assert s._transport.lanes.connected == 4 and s._transport.lanes.state is True
    assert len(lane_io) == 24 and all(lanes == 2 for _, _, lanes in lane_io)


def test_lanes_not_offered_or_used_are_refused(daemon: str) -> None:
    with td.connect(daemon, shm=False) as s:
        w = s.welcome
        assert w.bulk_lanes == 4 and w.bulk_port
        held = []
        try:
            for lane, want in [(7, b""), (4, b""), (255, b""), (1, b"Y"), (1, b""), (0, b"Y"),
                               (0, b""), (3, b"Y"), (3, b"")]:
                answer, sock = _hello(w.bulk_port, _lane_hello(w, lane))
                assert answer == want, f"lane {lane}"
                held.append(sock)
            bad = b"TDBULK02" + b"x" * 32 + bytes([2])  # a token no session has
            assert _hello(w.bulk_port, bad)[0] == b""
            # The session's own lane 0 is taken: its transfers take the stream.
            a = _random(9 * MiB, 1)
            np.testing.assert_array_equal((td.tensor(a) + 2).numpy(), a + 2)
            assert s._transport.lanes.state is False and s._transport.lanes.connected == 0
        finally:
            for sock in held:
                sock.close()


def test_lanes_up_to_the_first_refused(daemon: str,
                                       lane_io: List[Tuple[str, int, int]]) -> None:
    """Lane 2 is taken before the session connects: it keeps lanes 0 and 1 and stripes over
    those (the daemon has 0-2 attached and answers on at most the 2 lanes asked)."""
    with td.connect(daemon, shm=False) as s:
        answer, taken = _hello(s.welcome.bulk_port, _lane_hello(s.welcome, 2))
        try:
            assert answer == b"Y"
            a = _random(33 * MiB, 2)
            x = td.tensor(a)
            assert s._transport.lanes.connected == 2
            np.testing.assert_array_equal(x.numpy(), a)
            np.testing.assert_array_equal((x * 3).numpy(), a * 3)
            assert lane_io == [("upload", 33 * MiB, 2), ("download", 33 * MiB, 2),
                               ("download", 33 * MiB, 2)]
        finally:
            taken.close()


@pytest.mark.parametrize("direction", ["upload", "download"])
def test_a_broken_lane_fails_one_transfer_then_the_stream_serves(
        daemon: str, direction: str) -> None:
    with td.connect(daemon, shm=False) as s:
        a = _random(33 * MiB, 3)
        x = td.tensor(a)  # connects 4 lanes, striped over them
        assert s._transport.lanes.connected == 4
        lane = 2 if direction == "upload" else 1
        s._transport.lanes.socks[lane].shutdown(socket.SHUT_RDWR)  # as if the network dropped it
        # The daemon's lane fails too and shuts its other lanes down, so whichever lane this
        # end finds broken first is named.
        with pytest.raises(td.Error, match=rf"{direction} of handle \d+: lane \d of the "
                                           "bulk socket to tensord broke"):
            if direction == "upload":
                td.tensor(a)
            else:
                x.numpy()
        assert s._transport.lanes.state is False and s._transport.lanes.connected == 0
        b = _random(33 * MiB, 4)
        y = td.tensor(b)  # the stream now
        np.testing.assert_array_equal((x + y).numpy(), a + b)
        np.testing.assert_array_equal(x.numpy(), a)
