"""pytest fixtures: the real tensord daemon, sessions on it, its Admin service, and a fake.

Run from the repository root: ``/usr/bin/python3 -m pytest tests/python``. Tests that need the
daemon skip (saying how to build it) when ``bazel-bin/server/tensord`` is missing; the unit tests
(``test_unit_*.py``) run anyway against ``fake_daemon.FakeDaemon``.
"""

from __future__ import annotations

import os
import sys
from typing import Iterator, List, Tuple

import pytest

# $TENSORD_PYTHON_CLIENT: another copy of the client package's parent directory (tools/test.sh
# runs the suite against one whose C speedups are built with AddressSanitizer).
CLIENT = os.environ.get("TENSORD_PYTHON_CLIENT") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
sys.path.insert(0, CLIENT)
sys.path.insert(0, os.path.dirname(__file__))
from daemon_launcher import DAEMON, REPO, running_daemon  # noqa: E402,F401 (re-exported)

if not os.path.exists(os.path.join(CLIENT, "tensord", "_proto", "tensord_pb2.py")):
    import gen_proto  # the stubs are generated, never committed: make them on first use

    gen_proto.generate()

import tensord  # noqa: E402
from tensord._proto import admin_pb2, admin_pb2_grpc  # noqa: E402
from devices import cuda_visible  # noqa: E402
import c_modules  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "c_module(name): the test needs the client's C module "
                            "`name` (_speedups, _ring, _mailbox); c_modules.py says what a "
                            "missing one does")


def pytest_runtest_setup(item: pytest.Item) -> None:
    c_modules.check(item)


@pytest.fixture(scope="session")
def daemon() -> Iterator[str]:
    """The real daemon shared by the test session (default flags)."""
    with running_daemon() as address:
        yield address


@pytest.fixture
def session(daemon: str) -> Iterator[tensord.Session]:
    """A fresh default session on the real daemon, closed after the test."""
    with tensord.connect(daemon) as s:
        yield s


@pytest.fixture
def admin(daemon: str) -> Iterator[admin_pb2_grpc.AdminStub]:
    """A stub of the daemon's Admin service."""
    import grpc

    channel = grpc.insecure_channel(daemon)
    yield admin_pb2_grpc.AdminStub(channel)
    channel.close()


def session_info(admin_stub: admin_pb2_grpc.AdminStub, session_id: str) -> "object":
    """The daemon's ``SessionInfo`` for one session (Admin ListSessions)."""
    resp = admin_stub.ListSessions(admin_pb2.ListSessionsRequest())
    for s in resp.sessions:
        if s.session_id == session_id:
            return s
    raise AssertionError(f"session {session_id} not in ListSessions: "
                         f"{[s.session_id for s in resp.sessions]}")


def live_handles(admin_stub: admin_pb2_grpc.AdminStub, session_id: str) -> int:
    """The daemon's live-handle count for one session."""
    return session_info(admin_stub, session_id).live_handles


# ---------------------------------------------------------------------------- devices
# Note [Device-parametrized tests]: a test that takes the `device` fixture runs once per device
# of the daemon: on "cpu", and on "cuda:0" when this machine has a CUDA GPU. Whether it has one
# is decided at collection, before any daemon runs, by asking the driver (libcuda) directly:
# without a GPU the cuda:0 cases are collected with a skip mark, so they cost no session and the
# CPU suite's runtime stays what it was; with one, the fixture still skips (saying so) when the
# daemon's Welcome does not list the device (a daemon built without the CUDA toolkit).


def device_params() -> list:
    """The `device` fixture's parameters: cpu, and cuda:0 (skip-marked without a GPU)."""
    ok, why = cuda_visible()
    cuda = "cuda:0" if ok else pytest.param(
        "cuda:0", marks=pytest.mark.skip(reason=f"no CUDA device on this machine ({why}): "
                                                "a GPU test needs a GPU"))
    return ["cpu", cuda]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", device_params(), indirect=True)


@pytest.fixture
def device(request: pytest.FixtureRequest, session: tensord.Session) -> Iterator[str]:
    """Runs a test with the session's default device set to each of the daemon's devices
    (uploads and creation ops land there); Note [Device-parametrized tests]."""
    name = request.param
    if name not in session.devices:
        pytest.skip(f"no {name} device on the daemon (its Welcome lists "
                    f"{', '.join(session.devices)}; a GPU test needs a GPU and a CUDA build)")
    before = session.default_device
    session.set_options(default_device=name)
    yield name
    session.set_options(default_device=before)


@pytest.fixture
def cuda_session(session: tensord.Session) -> Iterator[tensord.Session]:
    """The ``session`` fixture for GPU-only tests: skips unless the daemon has cuda:0."""
    ok, why = cuda_visible()
    if not ok:
        pytest.skip(f"no CUDA device on this machine ({why})")
    if "cuda:0" not in session.devices:
        pytest.skip(f"no CUDA device on the daemon (devices: {', '.join(session.devices)})")
    yield session


@pytest.fixture
def fake() -> Iterator["object"]:
    """An in-process fake daemon (tests/python/fake_daemon.py) for client unit tests."""
    from fake_daemon import FakeDaemon

    d = FakeDaemon(chunk_bytes=4096)
    yield d
    d.stop()


@pytest.fixture
def fake_session(fake: "object") -> Iterator[tensord.Session]:
    """A default session on the fake daemon."""
    with tensord.connect(fake.address) as s:  # type: ignore[attr-defined]
        yield s


@pytest.fixture
def lane_io(monkeypatch: pytest.MonkeyPatch) -> List[Tuple[str, int, int]]:
    """("upload" or "download", bytes, lanes) of each transfer on the bulk socket."""
    from tensord._bulk import BulkLanes

    seen: List[Tuple[str, int, int]] = []
    real = BulkLanes.io

    def spy(self, what, n, lanes, move, lock):
        seen.append((what.split()[0], n, lanes))
        return real(self, what, n, lanes, move, lock)

    monkeypatch.setattr(BulkLanes, "io", spy)
    return seen
