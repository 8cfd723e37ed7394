"""item() through the session region's mailbox (Note [Python mailbox] in ``_shm.py``,
docs/protocol.md "Mailbox") against the real daemon: the daemon announces the first answer of a
download in the region's first page and wakes the waiting thread itself; values, dtypes and
errors are the stream's, threads taking turns each get their own answer, and the C module's
wait and wake keep their contract (the word names the request, a local wake, a bounded sleep).
Needs the ``_mailbox`` C module (the ``c_module`` mark: c_modules.py says when its absence
skips and when it fails)."""

from __future__ import annotations

import mmap
import threading

import numpy as np
import pytest

import tensord as td
from tensord import _shm

pytestmark = pytest.mark.c_module("_mailbox")


def test_item_values_come_from_the_mailbox(daemon: str) -> None:
    with td.connect(daemon, shm=True, mailbox=True) as s:
        assert s._transport.shares_memory and s._transport.region.word != 0
        x = td.tensor(np.arange(5, dtype=np.float32))
        for i in range(20):
            assert (x[i % 5] * 2 + i).item() == pytest.approx((i % 5) * 2.0 + i)
        assert td.tensor(np.array([7], np.int64)).sum().item() == 7
        assert (td.ones(3, dtype=td.bfloat16) * 3).sum().item() == 9.0
        # Most answers win the race with the stream's copy (which the reader then drops).
        assert s._transport.region.answers > 0
        assert s._transport.region.notify_rid == 0 and len(s._requests) == 0


def test_an_error_is_answered_on_the_stream_and_the_session_goes_on(daemon: str) -> None:
    with td.connect(daemon, shm=True, mailbox=True) as s:
        bad = td.tensor(np.ones(3, np.float32)) + td.tensor(np.ones(4, np.float32))
        with pytest.raises(td.Error, match="broadcast"):
            bad.sum().item()
        assert s._transport.region.notify_rid == 0
        assert (td.ones(2) * 4).sum().item() == 8.0


def test_threads_taking_turns_each_get_their_own_answer(daemon: str) -> None:
    with td.connect(daemon, shm=True, mailbox=True) as s:
        base = td.tensor(np.arange(4, dtype=np.float32))  # its shape: read by 4 threads at once
        wrong = []

        def work(k: int) -> None:
            try:
                for i in range(25):
                    want = float(k * 100 + i) + k
                    got = (base[k] + (k * 100 + i)).item()
                    if got != want:
                        wrong.append((k, i, got, want))
            except Exception as e:  # noqa: BLE001 (reported by the main thread)
                wrong.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert wrong == [] and s._transport.region.notify_rid == 0


def test_wait_returns_on_the_word_a_local_wake_or_the_timeout() -> None:
    page = mmap.mmap(-1, 4096)
    word = np.frombuffer(page, dtype=np.uint8).ctypes.data + 64
    wait, wake = _shm._mailbox.wait, _shm._mailbox.wake
    assert wait(word, 5, 0, 1000) == 0  # not announced: the timeout returns what is there
    wake(word, 5)
    assert wait(word, 5, 0, 10**6) == 5  # announced: at once
    got = []
    t = threading.Thread(target=lambda: got.append(wait(word, 9, 50, 10**7)))
    t.start()
    wake(word, 9 | 0x80000000)  # the reader's own wake-up for request 9
    t.join(timeout=30)
    assert got == [9 | 0x80000000]
    with pytest.raises(ValueError, match="misaligned"):
        wait(word + 1, 1, 0, 0)
