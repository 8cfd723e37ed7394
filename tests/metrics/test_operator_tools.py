"""tensorctl for operators against the real daemon: `users` (sessions, memory against the quota,
ops/s, auth failures; its --json as docs/tensorctl.md documents it) and `kill --reason`, whose
text the killed client's error shows, escaped."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from typing import Iterator, List

import pytest

from conftest import REPO, running_daemon
import tensord as td

TENSORCTL = os.environ.get("TENSORCTL", os.path.join(REPO, "bazel-bin", "tools", "tensorctl"))
QUOTA = 64 << 20


@pytest.fixture
def daemon_with_users() -> Iterator[str]:
    if not os.access(TENSORCTL, os.X_OK):
        pytest.fail(f"tensorctl is not built ({TENSORCTL}): bazel build //tools:tensorctl")
    tmp = tempfile.mkdtemp(prefix="tensord-users-")
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write(f"alice alice-token quota={QUOTA}\noperator operator-token admin\n")
    os.chmod(tokens, 0o600)
    with running_daemon(f"--tokens_file={tokens}") as address:
        yield address


def tensorctl(address: str, token: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([TENSORCTL, f"--server={address}", f"--token={token}", *args],
                          capture_output=True, text=True, timeout=60, check=check)


def test_users_shows_sessions_memory_quota_rate_and_auth_failures(daemon_with_users: str) -> None:
    address = daemon_with_users
    with pytest.raises(td.Error):  # a token no user has
        with td.connect(address, token="no-such-token") as s:
            td.ones(1).numpy()
    # alice's token is not an admin's: refused, and counted against alice.
    refused = tensorctl(address, "alice-token", "sessions", check=False)
    assert refused.returncode == 1 and "refused" in refused.stderr
    with td.connect(address, token="alice-token") as s:
        held = td.ones(512, 512)  # 1 MiB against alice's quota
        assert held.sum().item() == 512 * 512
        stop = threading.Event()
        errors: List[BaseException] = []

        def work() -> None:  # ops while tensorctl measures the rate
            try:
                y = td.ones(8)
                while not stop.is_set():
                    for _ in range(50):
                        y = y + 1
                    y.sum().item()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        worker = threading.Thread(target=work)
        worker.start()
        try:
            out = tensorctl(address, "operator-token", "--json", "--interval=0.5s", "users")
            table = tensorctl(address, "operator-token", "--interval=0.2s", "users")
        finally:
            stop.set()
            worker.join()
        assert not errors, errors
    report = json.loads(out.stdout)
    assert report["unknown_token_failures"] >= 1
    assert 0.4 <= report["window_seconds"] <= 30
    users = {u["user"]: u for u in report["users"]}
    alice = users["alice"]
    assert alice["sessions"] == 1
    assert alice["memory_bytes"]["cpu"] >= 512 * 512 * 4
    assert alice["quota_bytes"] == QUOTA
    # JSON numbers carry 6 significant digits.
    assert alice["quota_used"] == pytest.approx(alice["memory_bytes"]["cpu"] / QUOTA, rel=1e-4)
    assert alice["ops_per_second"] > 0
    assert alice["ops_total"] >= alice["ops_per_second"] * report["window_seconds"]
    assert alice["commands_total"] >= alice["ops_total"] // 51
    assert alice["auth_failures"] == 1
    assert alice["admin"] is False and alice["in_tokens_file"] is True
    assert alice["fallbacks_total"] == 0  # the native client runs every op on the daemon
    assert set(alice) == {"user", "sessions", "memory_bytes", "quota_bytes", "quota_used",
                          "ops_per_second", "ops_total", "commands_total", "fallbacks_total",
                          "auth_failures", "admin", "in_tokens_file"}
    assert "alice" in table.stdout and "unknown tokens refused" in table.stdout


def test_kill_reason_reaches_the_client_escaped(daemon_with_users: str) -> None:
    address = daemon_with_users
    reason = "GPU maintenance at 14:00\n\x1b[31mfake prompt$ "
    with td.connect(address, token="alice-token") as s:
        x = td.ones(4)
        assert x.sum().item() == 4
        out = tensorctl(address, "operator-token", "--json", "kill", s.session_id,
                        f"--reason={reason}")
        assert json.loads(out.stdout) == {"killed": s.session_id, "reason": reason}
        with pytest.raises(td.Error) as raised:
            (x + 1).numpy()
    message = str(raised.value)
    assert "session killed by an administrator: GPU maintenance at 14:00" in message
    assert "\\n\\x1b[31mfake prompt$ " in message  # shown, escaped
    assert "\x1b" not in message and "\n\\x1b" not in message
    # Too long a reason is refused, and the session named must exist.
    too_long = tensorctl(address, "operator-token", "kill", "0" * 16, "--reason=" + "x" * 600,
                         check=False)
    assert too_long.returncode == 1 and "the limit is 512" in too_long.stderr
