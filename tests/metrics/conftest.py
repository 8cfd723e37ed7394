"""Fixtures of tests/metrics: the real daemon (tests/python's launcher) with its metrics on.

Run from the repository root: ``/usr/bin/python3 -m pytest tests/metrics`` (tools/test.sh does),
after ``bazel build //server:tensord //tools:tensorctl``.
"""

from __future__ import annotations

import importlib.util
import os

_PYTHON_TESTS = os.path.join(os.path.dirname(__file__), "..", "python")
_spec = importlib.util.spec_from_file_location("tensord_daemon_fixtures",
                                               os.path.join(_PYTHON_TESTS, "conftest.py"))
daemon_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(daemon_fixtures)
running_daemon = daemon_fixtures.running_daemon
REPO = daemon_fixtures.REPO
