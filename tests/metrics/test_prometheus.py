"""The daemon's metrics scraped by a real Prometheus server (Debian's `prometheus`) on loopback.

The daemon serves /metrics on a port it picks (--metrics_listen=127.0.0.1:0, written to
--metrics_port_file); Prometheus scrapes it every 250 ms into a temporary store; a client's work
must then show in Prometheus's own answers (/api/v1/query): the ops counter grows by at least the
ops run, and the session's tensors appear as its memory. Every wait polls with a deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from typing import Callable, Iterator, Optional

import pytest

from conftest import running_daemon
import tensord as td

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
DEADLINE_S = 60.0


def wait_for(what: str, probe: Callable[[], Optional[object]], log: str = "") -> object:
    """Polls `probe` until it returns something other than None, for DEADLINE_S at most."""
    deadline = time.monotonic() + DEADLINE_S
    last = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except OSError as e:  # not up yet
            last = e
        else:
            if last is not None:
                return last
        time.sleep(0.05)
    extra = ""
    if log and os.path.exists(log):
        with open(log, errors="replace") as f:
            extra = "\n" + f.read()[-3000:]
    pytest.fail(f"{what}: not within {DEADLINE_S:.0f} s (last: {last!r}){extra}")


def read_port(path: str) -> Optional[int]:
    try:
        with open(path) as f:
            text = f.read().strip()
    except FileNotFoundError:
        return None
    return int(text) if text else None


def free_port() -> int:
    """A port nothing listens on now (Prometheus cannot report one it picked itself)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """A Prometheus server scraping `target` every 250 ms, storing in a temporary directory."""

    def __init__(self, target: str) -> None:
        if not os.access(PROMETHEUS, os.X_OK):
            pytest.fail("Prometheus is not installed: tools/install_deps.sh installs Debian's "
                        "`prometheus`")
        self.dir = tempfile.mkdtemp(prefix="tensord-prometheus-")
        self.config = os.path.join(self.dir, "prometheus.yml")
        with open(self.config, "w") as f:
            f.write("global:\n  scrape_interval: 250ms\n  scrape_timeout: 200ms\n"
                    "scrape_configs:\n  - job_name: tensord\n    static_configs:\n"
                    f"      - targets: ['{target}']\n")
        self.log = os.path.join(self.dir, "prometheus.log")
        # A port picked here can be taken before Prometheus binds it: try a few.
        for _ in range(5):
            self.port = free_port()
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(
                    [PROMETHEUS, f"--config.file={self.config}",
                     f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
                     f"--web.listen-address=127.0.0.1:{self.port}"],
                    stdout=log, stderr=subprocess.STDOUT)
            ready = self._wait_ready()
            if ready:
                return
            self.close()
        pytest.fail(f"Prometheus did not start; its log:\n{open(self.log).read()[-3000:]}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready",
                                            timeout=1) as r:
                    if r.status == 200:
                        return True
            except OSError:
                time.sleep(0.05)
        return False

    def query(self, promql: str) -> list:
        """The instant vector Prometheus answers for `promql` (its /api/v1/query)."""
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?"
               + urllib.parse.urlencode({"query": promql}))
        with urllib.request.urlopen(url, timeout=5) as r:
            answer = json.load(r)
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def value(self, promql: str) -> Optional[float]:
        """The single sample's value, or None while there is none."""
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def metrics_daemon() -> Iterator[tuple]:
    """The daemon with --metrics_listen=127.0.0.1:0: (its address, its metrics port)."""
    tmp = tempfile.mkdtemp(prefix="tensord-metrics-")
    port_file = os.path.join(tmp, "metrics_port")
    with running_daemon("--metrics_listen=127.0.0.1:0",
                        f"--metrics_port_file={port_file}") as address:
        port = wait_for("the daemon's metrics port file", lambda: read_port(port_file))
        yield address, port
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def prometheus(metrics_daemon: tuple) -> Iterator[Prometheus]:
    server = Prometheus(f"127.0.0.1:{metrics_daemon[1]}")
    yield server
    server.close()
    shutil.rmtree(server.dir, ignore_errors=True)


def test_prometheus_sees_a_clients_work(metrics_daemon: tuple, prometheus: Prometheus) -> None:
    address, _ = metrics_daemon
    # Prometheus scrapes the daemon: `up` is 1 and the ops counter has a first value.
    wait_for("Prometheus scraping the daemon",
             lambda: prometheus.value('up{job="tensord"}') == 1.0 or None, prometheus.log)
    ops_before = wait_for("a first tensord_ops_total",
                          lambda: prometheus.value("tensord_ops_total"), prometheus.log)
    ops = 200
    with td.connect(address) as s:
        x = td.ones(256, 256)  # 256 KiB held by this session
        y = x
        for _ in range(ops):
            y = y + 1  # one op each
        assert y.sum().item() == 256 * 256 * (ops + 1)
        # The counter moved by at least the ops run (the sum is one more).
        wait_for(f"tensord_ops_total past {ops_before} + {ops}",
                 lambda: (prometheus.value("tensord_ops_total") or 0) >= ops_before + ops or None,
                 prometheus.log)
        # The session's tensors, by the session id the daemon gave it.
        session_memory = (f'sum(tensord_session_memory_bytes{{session="{s.session_id}",'
                          'kind="tensors"})')
        held = wait_for("the session's memory in Prometheus",
                        lambda: prometheus.value(session_memory) or None, prometheus.log)
        assert held >= 2 * 256 * 256 * 4  # x and y at least
        # The per-user view and the latency histogram are there too.
        assert prometheus.value('sum(tensord_user_memory_bytes{device="cpu"})') is not None
        assert (prometheus.value("tensord_command_latency_seconds_count") or 0) > 0
        assert prometheus.value('tensord_sessions{state="active"}') is not None
    # Gone with the session: its series disappear from the next scrapes.
    wait_for("the closed session's memory series gone",
             lambda: (not prometheus.query(
                 f'tensord_session_memory_bytes{{session="{s.session_id}"}}')) or None,
             prometheus.log)


def test_dashboard_queries_run_on_real_metrics(metrics_daemon: tuple,
                                               prometheus: Prometheus) -> None:
    """Every query of tools/grafana/tensord.json is valid PromQL, and every metric it names is
    one the daemon exports (the GPU ones only where NVML is)."""
    import re

    from conftest import REPO

    with open(os.path.join(REPO, "tools", "grafana", "tensord.json")) as f:
        dashboard = json.load(f)
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert exprs
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_daemon[1]}/metrics",
                                timeout=10) as r:
        exported = r.read().decode()
    for expr in exprs:
        promql = expr.replace("$__rate_interval", "1m").replace("$instance", ".*")
        prometheus.query(promql)  # asserts Prometheus accepted it
        for name in re.findall(r"\btensord_[a-z_]+", expr):
            if name.startswith("tensord_gpu_"):
                continue  # no GPU here: not exported, as designed
            family = re.sub(r"_(bucket|count|sum)$", "", name)
            # Its TYPE line: families with no series yet (no user connected) have one too.
            assert re.search(rf"^# TYPE {family} ", exported, re.M), f"{name} is not exported"
