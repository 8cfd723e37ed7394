"""A session's transport switches (``tensord._options``, docs/transport.md): the three
environment toggles and nothing else, keywords over the environment, refused nonsense, and the
Hello each choice sends. No daemon needed."""

from __future__ import annotations

import ast
import os
import pathlib
import re

import pytest

from conftest import REPO
from tensord import _command_ring, _options
from tensord._connection import hello_frame

PACKAGE = pathlib.Path(REPO) / "client" / "python" / "tensord"


def _names_in_code(path: pathlib.Path) -> set:
    """The ``TENSORD_*`` names a module's code holds as strings (docstrings are sentences)."""
    return {n.value for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and re.fullmatch(r"TENSORD_[A-Z_]+", n.value)}


def test_only_three_environment_toggles_and_one_module_reads_them():
    """The package's only transport toggles are ``_options``' three; other modules name only
    where to connect and the PyTorch device's checks."""
    elsewhere = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name != "_options.py" and "_proto" not in path.parts:
            elsewhere |= _names_in_code(path)
    assert elsewhere <= {"TENSORD_ADDRESS", "TENSORD_TOKEN", "TENSORD_TORCH_CHECK",
                         "TENSORD_TORCH_NO_FALLBACK"}
    assert _names_in_code(PACKAGE / "_options.py") == {
        _options.ENV_SHM, _options.ENV_BULK, _options.ENV_PURE_PYTHON} == {
        "TENSORD_SHM", "TENSORD_BULK", "TENSORD_PURE_PYTHON"}


@pytest.mark.parametrize("env, given, want", [
    (None, None, True), ("1", None, True), ("0", None, False), ("", None, True),
    ("0", True, True), ("1", False, False),
])
@pytest.mark.parametrize("name, field", [("TENSORD_SHM", "shm"), ("TENSORD_BULK", "bulk")])
def test_environment_toggle_and_keyword(monkeypatch, name, field, env, given, want):
    if env is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, env)
    opts = _options.resolve(**{field: given})
    assert getattr(opts, field) is want


@pytest.mark.parametrize("name", ["TENSORD_CMA", "TENSORD_PACKED", "TENSORD_RING",
                                  "TENSORD_MAILBOX", "TENSORD_BULK_LANES",
                                  "TENSORD_DOWNLOAD_CACHE_MB", "TENSORD_SYNC_SPIN_US",
                                  "TENSORD_DIRECT_SEND"])
def test_retired_toggles_change_nothing(monkeypatch, name):
    base = _options.resolve(shm=True, bulk=True)
    monkeypatch.setenv(name, "0")
    assert _options.resolve(shm=True, bulk=True) == base


def test_keywords():
    opts = _options.resolve(shm=True, bulk=False, ring=False, mailbox=True, sync_spin_us=0,
                            cma=False, bulk_lanes=2, download_cache_bytes=0,
                            tune_malloc=False)
    assert opts == _options.TransportOptions(
        shm=True, ring=False, mailbox=True, sync_spin_us=0, cma=False, bulk=False,
        bulk_lanes=2, download_cache_bytes=0, tune_malloc=False)
    assert _options.resolve(bulk_lanes=100).bulk_lanes == _options.MAX_BULK_LANES


@pytest.mark.parametrize("kwargs", [{"bulk_lanes": 0}, {"bulk_lanes": -1}, {"bulk_lanes": 1.5},
                                    {"bulk_lanes": "2"}, {"bulk_lanes": True},
                                    {"sync_spin_us": -1}, {"download_cache_bytes": -1}])
def test_refuses_nonsense(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        _options.resolve(**kwargs)


@pytest.mark.parametrize("mailbox, ring, cpus, want", [
    (None, True, 2, True),  # with the ring: always
    (None, False, 2, False),  # without: only on hosts of MAILBOX_MIN_CPUS or more
    (None, False, _options.MAILBOX_MIN_CPUS, True),
    (False, True, 64, False), (True, False, 1, True),  # the keyword decides
])
def test_mailbox_default(monkeypatch, mailbox, ring, cpus, want):
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    assert _options.resolve(mailbox=mailbox).mailbox_wanted(ring) is want


@pytest.mark.parametrize("shm, ring", [(True, True), (True, False), (False, True)])
def test_hello_says_what_the_options_allow(shm, ring):
    opts = _options.resolve(shm=shm, ring=ring, bulk=not shm)
    h = hello_frame("tok", "me", opts, "127.0.0.1:1").hello  # a TCP address: bulk if allowed
    assert (h.shm_transfer, h.packed_acks, h.bulk) == (shm, True, not shm)
    assert h.command_ring == (shm and ring and _command_ring.available)
    assert (h.token, h.client_name, h.resume_session_id) == ("tok", "me", "")
    r = hello_frame(None, "me", opts, "unix:/tmp/x", resume=("s", "secret", 7)).hello
    assert (r.resume_session_id, r.resume_secret, r.resume_received_seq) == ("s", "secret", 7)
