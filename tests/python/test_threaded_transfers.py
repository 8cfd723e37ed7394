"""Several Python threads on one session while big transfers run (the real daemon, a small
staging buffer, Note [Staging buffer], so that big uploads and downloads take several pieces
and wait for Acks mid-transfer): handles must reach the daemon in increasing order, every
transfer's chunks must stay consecutive, and every value must arrive intact.

Handles are allocated in command order (``_session``): a thread that has to wait for another
thread's exclusive transfer (``Batcher._exclusive_locked``) allocates its handle only once it
may queue the command that creates it. Were it allocated before the wait, a thread that got the
lock first afterwards would queue a higher handle ahead of it, and the daemon would refuse the
lower one ("is not above the last created handle")."""

from __future__ import annotations

import threading
from typing import List

import numpy as np
import pytest

import tensord as td
from tensord import _shm, _staging

PIECE = 1 << 20  # the staging buffer's size here
ROUNDS = 40
UPLOADERS = 2
CREATORS = 2


def test_threads_creating_tensors_around_big_uploads(daemon: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_staging, "MAX_BYTES", PIECE)
    # neither cross-memory attach nor the download cache: every big transfer is staged
    with td.connect(daemon, shm=True, cma=False, download_cache_bytes=0) as s:
        assert s._transport.shares_memory
        start = threading.Barrier(UPLOADERS + CREATORS)
        errors: List[BaseException] = []

        def uploader(k: int) -> None:
            # Uploads of two pieces through the staging buffer (exclusive, waiting for the
            # first piece's Ack) and their two-piece downloads; between, a stream upload.
            start.wait()
            for i in range(ROUNDS):
                n = (5 * PIECE) // 16 + 1024 * (i % 7)  # floats: 5/4 of a piece
                a = np.full(n, k * 10_000 + i, dtype=np.float32)
                assert a.nbytes >= _shm.MIN_BYTES
                t = td.tensor(a)
                mid = td.tensor(np.arange(1 << 15, dtype=np.float32) + i)  # 128 KiB: stream
                got = t.numpy()
                assert np.array_equal(got, a), (k, i)
                assert mid[-1].item() == (1 << 15) - 1 + i

        def creator(k: int) -> None:
            # Ops and small uploads, each creating handles, read back as they go.
            start.wait()
            for i in range(4 * ROUNDS):
                x = td.full((16,), float(k * 10_000 + i)) + 1
                y = td.tensor([float(i)] * 16) * 2
                assert (x + y).tolist() == [k * 10_000 + i + 1 + 2.0 * i] * 16, (k, i)

        def run(fn, k: int) -> None:
            try:
                fn(k)
            except BaseException as e:  # reported by the main thread
                errors.append(e)
                start.abort()

        threads = ([threading.Thread(target=run, args=(uploader, k)) for k in range(UPLOADERS)]
                   + [threading.Thread(target=run, args=(creator, k)) for k in range(CREATORS)])
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads), "a thread hung"
        assert not errors, errors[0]
        s.synchronize()  # no frame error (a refused handle) either
        assert s._transport.staging.buffer.nbytes == PIECE  # the transfers were staged
