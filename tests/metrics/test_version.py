"""Every surface that shows the daemon's version shows the one written in
client/python/tensord/_version.py (Note [Version], server/BUILD): ``tensord --version``, the
Welcome, Admin ServerInfo through ``tensorctl info``, the ``tensord_info`` metric,
``tensorctl --version`` and the Python client's ``tensord.__version__``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
import urllib.request

import pytest

from conftest import REPO, running_daemon
import tensord as td

DAEMON = os.environ.get("TENSORD_BINARY", os.path.join(REPO, "bazel-bin", "server", "tensord"))
TENSORCTL = os.environ.get("TENSORCTL", os.path.join(REPO, "bazel-bin", "tools", "tensorctl"))


def written_version() -> str:
    """The version as _version.py writes it, read as text (not imported)."""
    with open(os.path.join(REPO, "client", "python", "tensord", "_version.py")) as f:
        found = re.findall(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    assert len(found) == 1, f"_version.py must set __version__ once, found {found}"
    return found[0]


def metrics_port(path: str) -> int:
    deadline = time.monotonic() + 30  # start-up only: the file appears once it listens
    while time.monotonic() < deadline:
        if os.path.exists(path) and open(path).read().strip():
            return int(open(path).read())
        time.sleep(0.02)
    pytest.fail(f"the daemon wrote no {path} within 30 s")


def test_every_surface_shows_the_one_version() -> None:
    version = written_version()
    for binary in (DAEMON, TENSORCTL):
        if not os.access(binary, os.X_OK):
            pytest.fail(f"{binary} is not built: bazel build //server:tensord //tools:tensorctl")
    assert td.__version__ == version

    name_and_version = {
        binary: subprocess.run([binary, "--version"], capture_output=True, text=True,
                               timeout=60, check=True).stdout.strip()
        for binary in (DAEMON, TENSORCTL)}
    assert name_and_version == {DAEMON: f"tensord {version}", TENSORCTL: f"tensorctl {version}"}

    port_file = os.path.join(tempfile.mkdtemp(prefix="tensord-version-"), "mport")
    with running_daemon("--metrics_listen=127.0.0.1:0",
                        f"--metrics_port_file={port_file}") as address:
        with td.connect(address) as session:
            assert session.server_version == version  # the Welcome
        info = subprocess.run([TENSORCTL, f"--server={address}", "info", "--json"],
                              capture_output=True, text=True, timeout=60, check=True)
        assert json.loads(info.stdout)["version"] == version  # Admin ServerInfo
        url = f"http://127.0.0.1:{metrics_port(port_file)}/metrics"
        with urllib.request.urlopen(url, timeout=30) as r:
            scraped = r.read().decode()
        assert re.findall(r'^tensord_info\{version="([^"]*)"\} 1$', scraped, re.M) == [version]
