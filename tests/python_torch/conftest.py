"""pytest fixtures of the tensord PyTorch device's suite: a real daemon, the device's session.

Run with the project's venv (``tools/install_deps.sh`` makes it), from the repository root:
``.venv-torch/bin/python -m pytest tests/python_torch``. The whole suite skips, saying why, when
that interpreter's PyTorch is missing or too old for Python PrivateUse1 backends, and the
daemon tests skip when ``bazel-bin/server/tensord`` is not built (``running_daemon`` of
tests/python/daemon_launcher.py).

Every test runs with ``TENSORD_TORCH_CHECK=1`` (each mapped op's result is compared with
PyTorch's meta function) and fails if an op left the daemon for the CPU fallback unless it
says it expects that (``allow_fallback``).
"""

from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest

sys.path.append(os.path.join(os.path.dirname(__file__), "..", "python"))
from daemon_launcher import REPO, running_daemon  # noqa: E402,F401 (the tests import them)

os.environ.setdefault("TENSORD_TORCH_CHECK", "1")  # tools/test.sh also runs with 0

try:
    import torch
except ImportError:
    torch = None
WHY_SKIP = None
if torch is None:
    WHY_SKIP = (f"no PyTorch for {sys.executable}: run tools/install_deps.sh and use "
                ".venv-torch/bin/python")
elif not hasattr(torch._C, "_acc"):
    WHY_SKIP = (f"PyTorch {torch.__version__} is too old for the tensord device (no Python "
                "PrivateUse1 backends, torch._C._acc): use .venv-torch/bin/python")


def pytest_collection_modifyitems(config: object, items: list) -> None:
    if WHY_SKIP:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=WHY_SKIP))


@pytest.fixture(scope="session")
def daemon() -> Iterator[str]:
    with running_daemon() as address:
        yield address


@pytest.fixture(scope="session")
def td(daemon: str) -> Iterator[object]:
    """``tensord.torch`` connected to the test daemon (one session for the suite)."""
    import tensord.torch as tdt
    tdt.connect(daemon)
    yield tdt
    tdt.close()


@pytest.fixture
def production(td: object, monkeypatch: pytest.MonkeyPatch) -> object:
    """The device as programs run it: without the meta check, which turns direct calls off
    (Note [Direct calls]); ``_dispatch`` is the fixture's value."""
    from tensord.torch import _dispatch
    monkeypatch.setattr(_dispatch, "CHECK", False)
    return _dispatch


def recorded(dispatch: object) -> int:
    """How many argument keys have a recorded Call (Note [Direct calls])."""
    return sum(1 for v in dispatch._plain.values() if v[5] is not None)


@pytest.fixture(autouse=True)
def no_fallback(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test whose ops left the daemon, unless it is marked ``allow_fallback``."""
    if WHY_SKIP or "td" not in request.fixturenames:
        yield
        return
    import tensord.torch as tdt
    tdt.reset_fallback_counts()
    yield
    if request.node.get_closest_marker("allow_fallback") is None:
        assert tdt.fallback_counts() == {}, "ops ran on the CPU fallback"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "allow_fallback: the test may use the CPU fallback")
