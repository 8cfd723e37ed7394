"""Fixtures of tests/metrics: the real daemon (tests/python/daemon_launcher.py) with its metrics on.

Run from the repository root: ``/usr/bin/python3 -m pytest tests/metrics`` (tools/test.sh does),
after ``bazel build //server:tensord //tools:tensorctl``.
"""

from __future__ import annotations

import os
import sys

sys.path.append(os.path.join(os.path.dirname(__file__), "..", "python"))
from daemon_launcher import REPO, running_daemon  # noqa: E402,F401 (the tests import them)
