"""``Session.memory_stats`` and ``Session.note_fallback`` against a daemon that does not say it
reads them (the fake daemon's Welcome, as an older daemon's): the first refuses at once instead
of waiting for an answer that never comes, the second sends nothing. No C++ daemon needed; the
real daemon's answers are tests/python/test_session_memory.py's."""

import pytest

import tensord as td

from test_unit_session import commands


def test_an_older_daemon_gets_neither_command(fake, fake_session):
    assert not fake_session.welcome.memory_stats and not fake_session.welcome.note_fallbacks
    with pytest.raises(NotImplementedError, match="does not answer GetMemoryStats"):
        fake_session.memory_stats()
    fake_session.note_fallback("aten.cummax.default")
    assert td.ones(2).tolist() == [1.0, 1.0]  # a flush and a round trip after the report
    td.synchronize()
    assert commands(fake, "note_fallbacks") == []
    assert commands(fake, "get_memory_stats") == []
