"""A session's cross-memory-attach state alone (``_cma.CmaBinding``), against a fake binding
socket: bound only when wanted and the daemon says so, again after a resume, never used from
another process, the probe run once. The real daemon: test_cma.py."""

from __future__ import annotations

import os
import socket
import threading

from tensord import _cma
from tensord._proto import tensord_pb2 as pb


class _FakeBinder:
    """An abstract unix socket answering ``Y`` to ``TDCMA001`` + a ticket it admits, else
    ``N``; ``hellos`` holds what each connection sent."""

    def __init__(self, admit: set) -> None:
        self.admit = admit
        self.hellos = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.name = f"@tensord-test-cma-{os.getpid()}-{id(self)}"
        self.server.bind("\0" + self.name[1:])
        self.server.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                got = b""
                while len(got) < len(_cma.MAGIC) + _cma.TICKET_BYTES:
                    part = conn.recv(64)
                    if not part:
                        break
                    got += part
                self.hellos.append(got)
                ticket = got[len(_cma.MAGIC):].decode()
                ok = got.startswith(_cma.MAGIC) and ticket in self.admit
                conn.sendall(_cma.BOUND if ok else b"N")

    def welcome(self, ticket: str) -> pb.Welcome:
        return pb.Welcome(cma=True, cma_socket=self.name, cma_ticket=ticket)

    def close(self) -> None:
        self.server.close()


def test_bound_when_wanted_and_admitted():
    t1, t2 = "a" * 32, "b" * 32
    fake = _FakeBinder({t1})
    try:
        unwanted = _cma.CmaBinding(wanted=False)
        unwanted.bind(fake.welcome(t1))
        assert not unwanted.bound and fake.hellos == []  # never asks
        refused = _cma.CmaBinding(wanted=True)
        refused.bind(fake.welcome(t2))
        assert not refused.bound
        b = _cma.CmaBinding(wanted=True)
        b.bind(fake.welcome(t1))
        assert b.bound and fake.hellos[-1] == _cma.MAGIC + t1.encode()
        fake.admit = {t2}  # a resume's Welcome carries a new ticket
        b.rebind(fake.welcome(t2))
        assert b.bound and fake.hellos[-1] == _cma.MAGIC + t2.encode()
        b.rebind(fake.welcome(t1))  # spent
        assert not b.bound
        n = len(fake.hellos)
        b.rebind(fake.welcome(t2))  # no longer bound: not asked again
        assert len(fake.hellos) == n
    finally:
        fake.close()


def test_no_binding_without_an_offer():
    for w in (pb.Welcome(), pb.Welcome(cma=True, cma_socket="@x", cma_ticket="short"),
              pb.Welcome(cma=True, cma_socket="@tensord-no-such-socket", cma_ticket="c" * 32)):
        b = _cma.CmaBinding(wanted=True)
        b.bind(w)
        assert not b.bound


def test_usable_probes_once_and_never_in_another_process(monkeypatch):
    b = _cma.CmaBinding(wanted=True)
    probes = []
    assert not b.usable(lambda: probes.append(1) or True)  # not bound: no probe
    b.bound = True
    assert b.usable(lambda: probes.append(1) or True)
    assert b.usable(lambda: probes.append(1) or False)  # the first answer stays
    assert probes == [1]
    monkeypatch.setattr(os, "getpid", lambda: -1)  # as a forked child sees it
    assert not b.usable(lambda: True)
    monkeypatch.undo()
    assert b.usable(lambda: True)
    failing = _cma.CmaBinding(wanted=True)
    failing.bound = True
    assert not failing.usable(lambda: False) and not failing.usable(lambda: True)
