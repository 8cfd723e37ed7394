"""The bulk socket's lanes without a daemon (``tensord._bulk``, docs/protocol.md "Bulk socket"):
the split of a transfer over lanes against hand-computed cases and against proto/bulk_socket.h
itself (compiled here when a C++ compiler is at hand), the lanes a session connects, the
striping of I/O over socket pairs, and a bulk ``Data.payload``'s lanes in the hand decoder."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import threading

import numpy as np
import pytest

from conftest import REPO
import tensord as td
from tensord import _bulk, _data_frame
from tensord._options import TransportOptions
from tensord._proto import tensord_pb2 as pb

KiB, MiB = 1 << 10, 1 << 20


@pytest.mark.parametrize("n, lanes, spans", [
    # 10 MiB over 4: 2.5 MiB each, already a multiple of 64 KiB
    (10 * MiB, 4, [(0, 2560 * KiB), (2560 * KiB, 5 * MiB), (5 * MiB, 7680 * KiB),
                   (7680 * KiB, 10 * MiB)]),
    # one byte more: ceil(n / 4) = 2621441 rounds up to 41 * 64 KiB, the last lane is shorter
    (10 * MiB + 1, 4, [(0, 2686976), (2686976, 5373952), (5373952, 8060928),
                       (8060928, 10 * MiB + 1)]),
    # 8 MiB and 12345 bytes over 2: ceil = 4200453 rounds up to 65 * 64 KiB
    (8 * MiB + 12345, 2, [(0, 4259840), (4259840, 8 * MiB + 12345)]),
    # smaller than lanes * 64 KiB: the first lanes take it all, the others are empty
    (100000, 4, [(0, 65536), (65536, 100000), (100000, 100000), (100000, 100000)]),
    (3 * 64 * KiB, 3, [(0, 64 * KiB), (64 * KiB, 128 * KiB), (128 * KiB, 192 * KiB)]),
    (64 * KiB, 3, [(0, 64 * KiB), (64 * KiB, 64 * KiB), (64 * KiB, 64 * KiB)]),
    (0, 3, [(0, 0), (0, 0), (0, 0)]),
    # one lane, or 0 (= 1): lane 0 carries everything, any other nothing
    (5 * MiB + 3, 1, [(0, 5 * MiB + 3), (5 * MiB + 3, 5 * MiB + 3)]),
    (5 * MiB + 3, 0, [(0, 5 * MiB + 3), (5 * MiB + 3, 5 * MiB + 3)]),
])
def test_lane_span_hand_computed(n, lanes, spans):
    assert [_bulk.lane_span(n, lanes, i) for i in range(len(spans))] == spans


@pytest.mark.parametrize("n, available, lanes", [
    (0, 4, 1), (MiB, 4, 1), (4 * MiB, 4, 1), (8 * MiB - 1, 4, 1), (8 * MiB, 4, 2),
    (8 * MiB + 12345, 4, 2), (12 * MiB, 3, 3), (16 * MiB, 2, 2), (33 * MiB, 4, 4),
    (33 * MiB, 8, 8), (33 * MiB, 1, 1), (33 * MiB, 0, 1), (100 * MiB, 8, 8),
])
def test_lanes_for_hand_computed(n, available, lanes):
    assert _bulk.lanes_for(n, available) == lanes


def test_spans_tile_the_transfer():
    rng = random.Random(5)
    for _ in range(2000):
        n = rng.choice([rng.randrange(0, 1 << 20), rng.randrange(0, 1 << 34)])
        lanes = rng.randrange(1, 9)
        spans = [_bulk.lane_span(n, lanes, i) for i in range(lanes)]
        assert spans[0][0] == 0 and spans[-1][1] == n
        for (b0, e0), (b1, e1) in zip(spans, spans[1:]):
            assert e0 == b1 and b0 <= e0 and b1 <= e1
        assert all(b % _bulk.LANE_ALIGN == 0 or b == n for b, _ in spans)


_MIRROR = r"""
#include <cstdio>
#include "proto/bulk_socket.h"
int main() {
  unsigned long long n;
  unsigned lanes, lane;
  while (std::scanf("%llu %u %u", &n, &lanes, &lane) == 3) {
    const tensord::BulkLaneSpan s = tensord::BulkLane(n, lanes, lane);
    std::printf("%llu %llu %u\n", static_cast<unsigned long long>(s.begin),
                static_cast<unsigned long long>(s.end), tensord::BulkLanesFor(n, lanes));
  }
}
"""


def test_mirrors_proto_bulk_socket_h(tmp_path):
    cxx = shutil.which(os.environ.get("CXX", "c++"))
    if cxx is None:
        pytest.skip("no C++ compiler to build proto/bulk_socket.h with")
    src, exe = tmp_path / "mirror.cc", tmp_path / "mirror"
    src.write_text(_MIRROR)
    subprocess.run([cxx, "-std=c++17", "-O1", f"-I{REPO}", str(src), "-o", str(exe)],
                   check=True)
    rng = random.Random(9)
    cases = [(n, lanes, lane) for n in (0, 1, 65535, 65536, 100000, 8 * MiB + 12345, 33 * MiB)
             for lanes in range(0, 10) for lane in range(0, 10)]
    cases += [(rng.randrange(0, 1 << 36), rng.randrange(0, 10), rng.randrange(0, 10))
              for _ in range(3000)]
    out = subprocess.run([str(exe)], input="".join(f"{n} {a} {b}\n" for n, a, b in cases),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    for (n, lanes, lane), line in zip(cases, out):
        begin, end, count = map(int, line.split())
        assert _bulk.lane_span(n, lanes, lane) == (begin, end), (n, lanes, lane)
        assert _bulk.lanes_for(n, lanes) == count, (n, lanes)


def _pairs(k):
    return [socket.socketpair() for _ in range(k)]


@pytest.mark.parametrize("lanes", [1, 2, 3, 4])
def test_stripe_moves_each_span_on_its_lane(lanes):
    """What each lane of a sender carries arrives on its peer, each span where it belongs."""
    n = 5 * MiB + 777
    data = bytes(random.Random(lanes).getrandbits(8) for _ in range(4096)) * (n // 4096 + 1)
    data = memoryview(data[:n])
    pairs = _pairs(lanes)
    dst = np.zeros(n, dtype=np.uint8)
    got = []
    receiver = threading.Thread(target=lambda: got.append(
        _bulk._stripe([b for _, b in pairs], n, _bulk.receive(dst, n))))
    receiver.start()
    assert _bulk._stripe([a for a, _ in pairs], n, _bulk.send(data)) is None
    receiver.join(30)
    assert got == [None]
    assert dst.tobytes() == bytes(data)
    for a, b in pairs:
        a.close()
        b.close()


def test_stripe_names_the_failing_lane_and_wakes_the_others():
    """Lane 2's peer closes mid-transfer: the others, still waiting for bytes, are woken."""
    n = 12 * MiB
    pairs = _pairs(3)
    begin, end = _bulk.lane_span(n, 3, 2)
    pairs[2][0].sendall(bytes(1000))
    pairs[2][0].close()  # lane 2's sender goes after 1000 bytes; lanes 0 and 1 send nothing
    dst = np.zeros(n, dtype=np.uint8)
    failed = _bulk._stripe([b for _, b in pairs], n, _bulk.receive(dst, n))
    assert failed is not None
    lane, e = failed
    assert lane == 2 and isinstance(e, OSError)
    assert str(e) == f"closed after 1000 of {end - begin} bytes (bytes {begin} to {end} of {n})"
    for a, b in pairs:
        a.close()
        b.close()


def test_data_frame_carries_bulk_lanes():
    f = pb.ServerFrame(seq=5)
    f.data.request_id = 3
    f.data.total_bytes = f.data.payload.bulk.size = 33 * MiB
    f.data.payload.bulk.lanes = 4
    f.data.last = True
    f.data.meta.handle = 8
    c = _data_frame.decode(f.SerializeToString())
    assert (c.where, c.size, c.lanes, c.total_bytes, c.meta.handle) == ("bulk", 33 * MiB, 4,
                                                                         33 * MiB, 8)
    m = _data_frame.from_message(f)
    assert (m.where, m.size, m.lanes) == ("bulk", 33 * MiB, 4)
    f.data.payload.bulk.lanes = 0  # one lane: not sent
    assert _data_frame.decode(f.SerializeToString()).lanes == 0


class _FakeListener:
    """A bulk port that answers b"Y" to the hellos of the lanes in ``admit`` and closes the
    others; ``hellos`` lists the lanes asked for, in order."""

    def __init__(self, token: bytes, admit):
        self.token, self.admit = token, set(admit)
        self.hellos = []
        self.accepted = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            hello = conn.recv(8)
            rest = 33 if hello == b"TDBULK02" else 32
            while len(hello) < 8 + rest:
                hello += conn.recv(8 + rest - len(hello))
            lane = hello[40] if hello[:8] == b"TDBULK02" else 0
            self.hellos.append(lane)
            if hello[8:40] == self.token and lane in self.admit:
                conn.sendall(b"Y")
                self.accepted.append(conn)
            else:
                conn.close()

    def close(self):
        self.server.close()
        for c in self.accepted:
            c.close()


def _lanes(cap: int = _bulk.MAX_LANES, address: str = "127.0.0.1:1") -> _bulk.BulkLanes:
    return _bulk.BulkLanes(address, TransportOptions(bulk_lanes=cap))


@pytest.mark.parametrize("offered, cap, admit, hellos", [
    (4, 8, range(8), [0, 1, 2, 3]),  # as many as offered
    (4, 2, range(8), [0, 1]),  # connect(bulk_lanes=2)
    (4, 1, range(8), [0]),  # connect(bulk_lanes=1)
    (0, 8, range(8), [0]),  # a daemon from before lanes: Welcome.bulk_lanes 0
    (20, 20, range(20), list(range(8))),  # never past kBulkMaxLanes
    (4, 8, [0, 1, 3], [0, 1, 2]),  # lane 2 refused: 0 and 1 kept, 3 not tried
    (4, 8, [1, 2, 3], [0]),  # lane 0 refused: none
])
def test_connect_lanes(offered, cap, admit, hellos):
    token = "t" * 32
    fake = _FakeListener(token.encode(), admit)
    try:
        lanes = _lanes(cap)
        welcome = pb.Welcome(bulk_port=fake.port, bulk_token=token, bulk_lanes=offered)
        want = len(hellos) if hellos[-1] in admit else len(hellos) - 1
        assert lanes.state is None and lanes.connected == 0
        assert lanes.usable(welcome) is (want > 0)
        assert fake.hellos == hellos
        assert lanes.connected == want and lanes.state is (want > 0)
        assert lanes.usable(welcome) is (want > 0) and fake.hellos == hellos  # connects once
        lanes.close()
        assert lanes.connected == 0 and lanes.state is False and not lanes.usable(welcome)
    finally:
        fake.close()


@pytest.mark.parametrize("address, bulk, wanted", [
    ("127.0.0.1:5", True, True), ("localhost:5", True, True), ("[::1]:5", True, True),
    ("unix:/tmp/x.sock", True, False), ("127.0.0.1:5", False, False)])
def test_wanted_only_on_tcp_when_allowed(address, bulk, wanted):
    lanes = _bulk.BulkLanes(address, TransportOptions(bulk=bulk))
    assert lanes.wanted is wanted
    if not wanted:  # never connects
        assert not lanes.usable(pb.Welcome(bulk_port=1, bulk_token="t" * 32, bulk_lanes=4))


def test_io_releases_the_lock_and_a_failed_lane_drops_every_lane():
    lanes = _lanes()
    pairs = _pairs(2)
    lanes.socks, lanes.state = [a for a, _ in pairs], True
    lock = threading.Lock()
    lock.acquire()
    held = []

    def move(sock, begin, end):
        held.append(lock.locked())
        if begin > 0:
            raise OSError("reset")

    with pytest.raises(td.ConnectionLost, match="upload of handle 7: lane 1 of the bulk "
                                                "socket to tensord broke"):
        lanes.io("upload of handle 7", 16 * MiB, 2, move, lock)
    assert lock.locked()  # given back to the caller
    assert held == [False, False]  # the I/O ran without it
    assert lanes.state is False and lanes.connected == 0
    for _, b in pairs:
        b.close()
