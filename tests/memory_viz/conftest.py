"""pytest fixtures of the memory-history suite: the real daemon (``running_daemon`` of
tests/python/daemon_launcher.py), tensorctl, and PyTorch's memory viewer.

Run with the project's venv (``tools/install_deps.sh`` makes it), from the repository root:
``PYTHONPATH=client/python .venv-torch/bin/python -m pytest tests/memory_viz``. Every test
skips, saying why, when that interpreter has no ``torch.cuda._memory_viz``, or when
``bazel-bin/server/tensord`` is not built; a missing ``bazel-bin/tools/tensorctl`` fails
(``TENSORD_BINARY`` and ``TENSORCTL`` name others: tools/test.sh runs the sanitized ones).
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.append(os.path.join(os.path.dirname(__file__), "..", "python"))
from daemon_launcher import REPO, running_daemon  # noqa: E402,F401 (the tests import it)

TENSORCTL = os.environ.get("TENSORCTL", os.path.join(REPO, "bazel-bin", "tools", "tensorctl"))

try:
    import torch.cuda._memory_viz as memory_viz
    WHY_SKIP = None
    if not hasattr(memory_viz, "trace_plot") or not hasattr(memory_viz, "segment_plot"):
        WHY_SKIP = (f"torch.cuda._memory_viz of {sys.executable} has no trace_plot and "
                    "segment_plot (PyTorch 2.1 or later): use .venv-torch/bin/python")
except ImportError as e:
    WHY_SKIP = (f"no torch.cuda._memory_viz for {sys.executable} ({e}): run "
                "tools/install_deps.sh and use .venv-torch/bin/python")


def pytest_collection_modifyitems(config: object, items: list) -> None:
    if WHY_SKIP:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=WHY_SKIP))


@pytest.fixture
def tensorctl() -> str:
    if not os.access(TENSORCTL, os.X_OK):
        pytest.fail(f"tensorctl is not built ({TENSORCTL} missing): run "
                    "`bazel build //tools:tensorctl` first")
    return TENSORCTL
