"""The real tensord daemon for Python suites: ``running_daemon`` starts it on a free port.

Shared by every suite that runs a daemon (tests/python, tests/python_torch, tests/memory_viz,
tests/metrics): the others put this directory on ``sys.path`` (appended, so their own modules
come first) and import from here, instead of each loading tests/python/conftest.py by path.
Imports nothing of the client, so a suite's interpreter needs only pytest.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import time
from typing import Iterator

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DAEMON = os.environ.get("TENSORD_BINARY", os.path.join(REPO, "bazel-bin", "server", "tensord"))


@contextlib.contextmanager
def running_daemon(*flags: str) -> Iterator[str]:
    """Runs the real daemon on a free port with extra `flags`; yields its address.

    Stops it with SIGTERM afterwards and asserts a clean exit (status 0). Flags in
    ``$TENSORD_DAEMON_FLAGS`` come first (e.g. ``--default_device=cuda:0``, which puts the
    tensord PyTorch device's suite on the GPU: docs/gpu.md); `flags` can override them.
    """
    if not os.access(DAEMON, os.X_OK):
        # tools/test.sh sets TENSORD_REQUIRE_DAEMON=1: there a missing daemon is a failure, not
        # a suite of skips that reads as a pass.
        missing = (pytest.fail if os.environ.get("TENSORD_REQUIRE_DAEMON") == "1" else pytest.skip)
        missing(f"the tensord daemon is not built ({DAEMON} missing): run "
                "`bazel build //server:tensord` first")
    tmp = tempfile.mkdtemp(prefix="tensord-test-")
    port_file = os.path.join(tmp, "port")
    log_path = os.path.join(tmp, "daemon.log")
    log = open(log_path, "wb")
    # LD_PRELOAD is the client's: tools/test.sh preloads gcc's ASan runtime into the interpreter
    # for the instrumented C speedups, and a sanitized daemon carries its own (clang's, linked
    # in); the two in one process abort at start.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    proc = subprocess.Popen([DAEMON, "--listen=127.0.0.1:0", "--insecure",
                             f"--port_file={port_file}",
                             *shlex.split(os.environ.get("TENSORD_DAEMON_FLAGS", "")), *flags],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    # Process start-up only: poll for the port file at a short interval, 30 s at most.
    deadline = time.monotonic() + 30
    port = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with open(port_file) as f:
                port = f.read().strip()
        except FileNotFoundError:
            pass
        if port:
            break
        time.sleep(0.02)
    if not port:
        proc.kill()
        proc.wait()
        with open(log_path, errors="replace") as f:
            pytest.fail(f"the daemon did not write {port_file} within 30 s "
                        f"(exit {proc.returncode}); its output:\n{f.read()[-4000:]}")
    yield f"127.0.0.1:{port}"
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    log.close()
    with open(log_path, errors="replace") as f:
        tail = f.read()[-4000:]
    assert rc == 0, f"the daemon exited with {rc} on SIGTERM; its output:\n{tail}"
